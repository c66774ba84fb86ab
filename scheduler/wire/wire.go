// Package wire holds the JSON messages of the agent protocol: what a GPU node's
// agent and the control plane's agent listener say to each other. Both sides import
// it; neither imports the other.
//
// The protocol, all JSON over HTTP on the control plane's agent listener:
//
//	POST /agent/v1/register              Bearer <agent token>   RegisterRequest  -> 201 RegisterResponse
//	POST /agent/v1/heartbeat             Bearer <credential>    HeartbeatRequest -> 200 HeartbeatResponse
//	                                     (with GPU telemetry: GPUSample, kept in the leader's memory only)
//	POST /agent/v1/lease?wait=<seconds>  Bearer <credential>    LeaseRequest     -> 200 Assignment | 204 (nothing to do)
//	POST /agent/v1/tasks/{id}/progress   Bearer <credential>    ProgressRequest  -> 204
//	POST /agent/v1/tasks/{id}/complete   Bearer <credential>    CompleteRequest  -> 204
//	POST /agent/v1/tasks/{id}/fail       Bearer <credential>    FailRequest      -> 204
//	POST /agent/v1/deregister            Bearer <credential>                     -> 204 (leases handed back, not failed)
//	PUT  /agent/v1/models                Bearer <credential>    ModelsUpdate     -> 204 (what the node advertises now; leases kept)
//	PUT  /agent/v1/capacity              Bearer <credential>    CapacityUpdate   -> 204 (models, tools and voices now; leases kept)
//	PUT  /agent/v1/blobs/{key...}?lease_token=<token>  Bearer <credential>  raw bytes -> 201
//	GET  /agent/v1/blobs/{key...}        Bearer <credential>                     -> 200 raw bytes
//
// Blob keys a task writes must be "videos/<video id>/<task name>/<file name>".
//
// A report about a lease the node no longer holds (it expired and was given to
// another node, or its video failed) is refused with 409 and error code
// "stale_lease": the agent must drop that task and never retry the report. 401 means
// the credential is unknown: register again. Errors use the API's error envelope.
//
// Both sides ignore JSON fields they do not know, so a field is added to a
// message without a new version: an older peer goes on without it. The
// heartbeat's GPU telemetry (HeartbeatRequest.GPUs) came that way; it is
// transient (the control plane keeps the latest sample per node in the
// leader's memory, not in the replicated state), so an older control plane
// that drops it loses nothing but the operator's view.
package wire

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/scheduler"
)

// Capacity is what a node offers. GPUs come from NVML; a node without GPUs that
// renders with the procedural runner advertises virtual GPUs (Virtual true) so that
// GPU tasks can be placed on it.
type Capacity struct {
	Hostname   string          `json:"hostname"`
	GPUs       []scheduler.GPU `json:"gpus"`
	CPUSlots   int             `json:"cpu_slots"`
	Tools      []string        `json:"tools"`
	Models     []string        `json:"models"` // model ids it can render
	WarmModels []string        `json:"warm_models,omitempty"`
	// Virtual is true when GPUs are procedural render slots on CPU, not hardware.
	Virtual bool `json:"virtual,omitempty"`
	// Voices are the text-to-speech voices the node's espeak-ng offers, at
	// most MaxVoices, each passing Voice.Check, ids unique; empty when it has
	// no espeak-ng. The control plane serves their union over the registered
	// nodes as GET /v1/voices.
	Voices []Voice `json:"voices,omitempty"`
}

// Voice is one text-to-speech voice a node offers (pipeline.Voice on the
// agent's side).
type Voice struct {
	ID       string `json:"id"`       // e.g. "en-us+f3"
	Name     string `json:"name"`     // e.g. "English (America), Female 3"
	Language string `json:"language"` // espeak-ng language code, lower case, e.g. "en-us"
	Gender   string `json:"gender"`   // "male" or "female"
}

// Limits on the voices a node registers. espeak-ng 1.51 offers about 1,800
// (131 languages, each also with 13 variants).
const (
	MaxVoices         = 4096
	MaxVoiceIDLen     = 64
	MaxVoiceNameLen   = 128
	MaxVoiceLangLen   = 35
	VoiceGenderMale   = "male"
	VoiceGenderFemale = "female"
)

// Check reports what is wrong with v, or nil: an id of lower-case letters,
// digits, '-', '+' and '_' (not starting with '-' or '+'), a printable name,
// a lower-case language code of letters, digits and '-', and a gender of
// "male" or "female", each within its length limit.
func (v Voice) Check() error {
	switch {
	case !voiceToken(v.ID, MaxVoiceIDLen, "-+_") || v.ID[0] == '-' || v.ID[0] == '+':
		return fmt.Errorf("voice id %q: want 1 to %d of a-z, 0-9, '-', '+', '_', not starting with '-' or '+'", v.ID, MaxVoiceIDLen)
	case v.Name == "" || len(v.Name) > MaxVoiceNameLen || !utf8.ValidString(v.Name) ||
		strings.IndexFunc(v.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("voice %s: name must be 1 to %d bytes of printable UTF-8", v.ID, MaxVoiceNameLen)
	case !voiceToken(v.Language, MaxVoiceLangLen, "-") || v.Language[0] == '-':
		return fmt.Errorf("voice %s: language %q: want 1 to %d of a-z, 0-9, '-'", v.ID, v.Language, MaxVoiceLangLen)
	case v.Gender != VoiceGenderMale && v.Gender != VoiceGenderFemale:
		return fmt.Errorf("voice %s: gender %q: want %q or %q", v.ID, v.Gender, VoiceGenderMale, VoiceGenderFemale)
	}
	return nil
}

// CheckVoices checks every voice and that no id appears twice.
func CheckVoices(vs []Voice) error {
	if len(vs) > MaxVoices {
		return fmt.Errorf("%d voices: at most %d", len(vs), MaxVoices)
	}
	seen := make(map[string]bool, len(vs))
	for _, v := range vs {
		if err := v.Check(); err != nil {
			return err
		}
		if seen[v.ID] {
			return errors.New("voice id " + v.ID + " appears twice")
		}
		seen[v.ID] = true
	}
	return nil
}

// voiceToken reports whether s is 1 to maxLen characters of a-z, 0-9 and extra.
func voiceToken(s string, maxLen int, extra string) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// RegisterRequest introduces a node. Name is the operator's name for it (the
// hostname by default); registering again under the same name replaces the old
// node, whose leases are given back.
type RegisterRequest struct {
	Name     string   `json:"name"`
	Capacity Capacity `json:"capacity"`
}

// HeaderPreviousCredential, on a registration, is the credential the agent
// held before: the one its last run kept in its work dir, or the one the
// control plane has just refused. It proves that a live node of the same
// name is the registering agent's own, which the registration then
// replaces; without it a live node's name is refused (409
// node_name_in_use), so two machines given one --name do not take the
// node from each other in turn. A header, not a field, so that a control
// plane that predates it ignores it.
const HeaderPreviousCredential = "X-Vidfarm-Previous-Credential"

// RegisterResponse gives the node its id and the credential for every later call.
type RegisterResponse struct {
	NodeID           string `json:"node_id"`
	Credential       string `json:"credential"`
	LeaseSeconds     int    `json:"lease_seconds"`
	HeartbeatSeconds int    `json:"heartbeat_seconds"`
}

// LeaseReport is one lease the node holds and how far its task is.
type LeaseReport struct {
	TaskID  string  `json:"task_id"`
	Token   uint64  `json:"token"`
	Percent float64 `json:"percent"`
}

// HeartbeatRequest renews the node's leases. Draining asks for no new work.
// GPUs is optional telemetry: how each registered GPU is doing now (see
// GPUSample); the control plane keeps the latest in memory for the
// operator (admin node listing, console) and never replicates it. A
// control plane that predates the field ignores it (unknown JSON fields
// are ignored on this protocol), so an agent sends it unconditionally.
type HeartbeatRequest struct {
	Leases   []LeaseReport `json:"leases"`
	Draining bool          `json:"draining,omitempty"`
	GPUs     []GPUSample   `json:"gpus,omitempty"`
	// Paused says why a live node asks for no work now of its own accord
	// (its work dir over its limit); "" while it leases. Kept with the
	// telemetry, for the operator: the scheduler still counts the node.
	Paused string `json:"paused,omitempty"`
}

// MaxPausedLen bounds HeartbeatRequest.Paused, in bytes.
const MaxPausedLen = 500

// GPUSample is one GPU's state at a heartbeat, read from NVML. ID is the
// id the GPU registered with (its UUID; a MIG instance's MIG UUID): a
// sample for an id the node did not register is refused. For a MIG
// instance MemoryUsedGB is the instance's own; utilisation and temperature
// are its parent GPU's, the finest NVML reports. A value the GPU does not
// report is absent; a node of virtual GPUs sends no samples.
type GPUSample struct {
	ID string `json:"id"`
	// MemoryUsedGB is in decimal GB, like scheduler.GPU's memory: at most
	// the GPU's registered memory_total_gb.
	MemoryUsedGB float64 `json:"memory_used_gb"`
	// UtilizationPercent is NVML's GPU utilisation over its last sample
	// period, 0 to 100.
	UtilizationPercent *float64 `json:"utilization_percent,omitempty"`
	// TemperatureC is the die temperature in degrees Celsius.
	TemperatureC *float64 `json:"temperature_c,omitempty"`
	// PowerW is the board's power draw in watts.
	PowerW *float64 `json:"power_w,omitempty"`
}

// Bounds of a GPUSample's values (Check): beyond them a reading is a bug or
// a broken sensor, not a GPU.
const (
	MinGPUTemperatureC = -50
	MaxGPUTemperatureC = 200
	MaxGPUPowerW       = 10_000
)

// Check reports what is wrong with s, or nil, given the memory the GPU
// registered with: 0 <= memory_used_gb <= total, 0 <= utilization_percent
// <= 100, temperature within MinGPUTemperatureC..MaxGPUTemperatureC and
// 0 <= power_w <= MaxGPUPowerW. The agent leaves out samples that fail it,
// so that one odd reading never costs the heartbeat that renews its leases.
func (s GPUSample) Check(memoryTotalGB float64) error {
	in := func(p *float64, lo, hi float64) bool { return p == nil || (*p >= lo && *p <= hi) }
	switch {
	case s.ID == "":
		return errors.New("id is required")
	case !(s.MemoryUsedGB >= 0 && s.MemoryUsedGB <= memoryTotalGB):
		return fmt.Errorf("GPU %s: memory_used_gb %v: want 0 to its memory_total_gb, %v", s.ID, s.MemoryUsedGB, memoryTotalGB)
	case !in(s.UtilizationPercent, 0, 100):
		return fmt.Errorf("GPU %s: utilization_percent %v: want 0 to 100", s.ID, *s.UtilizationPercent)
	case !in(s.TemperatureC, MinGPUTemperatureC, MaxGPUTemperatureC):
		return fmt.Errorf("GPU %s: temperature_c %v: want %d to %d", s.ID, *s.TemperatureC, MinGPUTemperatureC, MaxGPUTemperatureC)
	case !in(s.PowerW, 0, MaxGPUPowerW):
		return fmt.Errorf("GPU %s: power_w %v: want 0 to %d", s.ID, *s.PowerW, MaxGPUPowerW)
	}
	return nil
}

// ModelsUpdate replaces the models a registered node advertises, and those
// warm on it, when one of its runners comes up or goes down; its GPUs,
// leases and maintenance stay. A control plane that does not know the
// route (404) or cannot take it yet mid-upgrade (503) leaves the agent to
// register again instead.
type ModelsUpdate struct {
	Models     []string `json:"models"`
	WarmModels []string `json:"warm_models,omitempty"`
}

// CapacityUpdate replaces, like ModelsUpdate, what a registered node
// offers, with its tools (executables, stage runners' ToolPlanner and
// ToolAvatar) and voices too: a speech server or stage runner that goes
// down or comes back changes them. The same refusals (404, 503) leave the
// agent to ModelsUpdate or to register again.
type CapacityUpdate struct {
	Models     []string `json:"models"`
	WarmModels []string `json:"warm_models,omitempty"`
	Tools      []string `json:"tools"`
	Voices     []Voice  `json:"voices,omitempty"`
}

// HeartbeatResponse lists the leases that were not renewed: the node must stop
// those tasks and discard their results. It also says what an operator
// made of the node: while Maintenance is set the node gets no new work.
type HeartbeatResponse struct {
	Stale []string `json:"stale,omitempty"` // task ids
	// Maintenance is NodeCordoned or NodeDraining; absent: the node is active.
	Maintenance string `json:"maintenance,omitempty"`
	// DrainDeadline (draining) is when the tasks the node still runs are
	// handed back to the queue; a later heartbeat names them stale.
	DrainDeadline *time.Time `json:"drain_deadline,omitempty"`
	// MaintenanceReason is the operator's note, if any.
	MaintenanceReason string `json:"maintenance_reason,omitempty"`
}

// A node's maintenance states (HeartbeatResponse.Maintenance; NodeActive is
// the empty value's name in logs and metrics).
const (
	NodeActive   = "active"
	NodeCordoned = "cordoned"
	NodeDraining = "draining"
)

// LeaseRequest asks for one task.
type LeaseRequest struct{}

// Video is what a task needs to know of its video (the validated request).
type Video struct {
	ID              string `json:"id"`
	Mode            string `json:"mode"`
	Prompt          string `json:"prompt"`
	DurationSeconds int    `json:"duration_seconds"`

	// The request's options: auto's presenter, voice, brand kit, template
	// and assets; manual's input images and model options.
	VideoOptions
	Orientation string `json:"orientation,omitempty"`
	// Brand is the video's brand kit as the composite draws it; nil without one.
	Brand *Brand `json:"brand,omitempty"`
	// AssetInputs name, in file_asset_ids order, the Assignment.Inputs entry of
	// each file asset (an image the scenes show).
	AssetInputs []string `json:"asset_inputs,omitempty"`

	Model       string `json:"model,omitempty"`
	Operation   string `json:"operation,omitempty"`
	Resolution  string `json:"resolution,omitempty"`
	AspectRatio string `json:"aspect_ratio,omitempty"`
}

// VideoOptions are the options a create request set, each absent when
// it set none: what a task renders with, and what the public video
// object echoes back (controlplane/api), so the two cannot drift.
type VideoOptions struct {
	AvatarID          string   `json:"avatar_id,omitempty"`
	VoiceID           string   `json:"voice_id,omitempty"`
	BrandKitID        string   `json:"brand_kit_id,omitempty"`
	StyleID           string   `json:"style_id,omitempty"`
	FileAssetIDs      []string `json:"file_asset_ids,omitempty"`
	ImageURL          string   `json:"image_url,omitempty"`
	FirstFrameURL     string   `json:"first_frame_url,omitempty"`
	LastFrameURL      string   `json:"last_frame_url,omitempty"`
	ImageURLs         []string `json:"image_urls,omitempty"`
	NegativePrompt    *string  `json:"negative_prompt,omitempty"`
	Seed              *int64   `json:"seed,omitempty"`
	GenerateAudio     *bool    `json:"generate_audio,omitempty"`
	Style             *string  `json:"style,omitempty"`
	MovementAmplitude *string  `json:"movement_amplitude,omitempty"`
	CfgScale          *float64 `json:"cfg_scale,omitempty"`
	CameraFixed       *bool    `json:"camera_fixed,omitempty"`
	AutoFix           *bool    `json:"auto_fix,omitempty"`
}

// Brand is what the composite needs of a brand kit.
type Brand struct {
	// Colors are "#rrggbb": the lower-third bar, then its accent line.
	Colors []string `json:"colors,omitempty"`
	// LogoInput names the Assignment.Inputs entry of a logo asset; LogoURL is
	// a logo the agent fetches like an input image (public https). At most
	// one is set.
	LogoInput string `json:"logo_input,omitempty"`
	LogoURL   string `json:"logo_url,omitempty"`
	// Fonts are the kit's typefaces, preferred first: the captions are set
	// in the first one the agent's machine has.
	Fonts []string `json:"fonts,omitempty"`
	// MotionStyle is how lively the presenter moves: calm, smooth (also
	// when empty), dynamic or energetic.
	MotionStyle string `json:"motion_style,omitempty"`
}

// Assignment is a leased task: run it, report progress, upload its artifacts,
// complete or fail it before Deadline (heartbeats move the deadline).
type Assignment struct {
	TaskID  string         `json:"task_id"`
	Token   uint64         `json:"token"`
	Name    string         `json:"name"` // "render", "plan", "scene-0003", ...
	Kind    scheduler.Kind `json:"kind"`
	Attempt int            `json:"attempt"`
	// Model is the catalog model the task was placed for (a node's runner for it
	// renders the task); empty for CPU tasks.
	Model    string    `json:"model,omitempty"`
	GPUIDs   []string  `json:"gpu_ids,omitempty"`
	Deadline time.Time `json:"deadline"`
	Video    Video     `json:"video"`
	// Inputs are the artifacts of the video's finished tasks, by name
	// ("plan/plan.json", "tts/voice.json", "scene-0001/clip.mp4", "render/clip.mp4"),
	// each a blob key to GET. An auto video presented by one of the account's
	// own avatars also has InputAvatar, that avatar's picture.
	Inputs map[string]string `json:"inputs,omitempty"`
	// Avatar is set on an avatar task (kind "avatar"): what to make. Video.ID
	// is then the avatar's id.
	Avatar *AvatarJob `json:"avatar,omitempty"`
	// Speech is set on a speech task (kind "speech"). Video.ID is then the
	// speech sample's id.
	Speech *SpeechJob `json:"speech,omitempty"`
}

// InputAvatar names the picture of an account's own avatar in the inputs of
// a composite task.
const InputAvatar = "avatar/" + ArtifactAvatar

// InputAvatarPhoto names the photo of a photo avatar made from an uploaded
// asset, in the inputs of its avatar task.
const InputAvatarPhoto = "photo/asset"

// AvatarJob is an account avatar to make: from Prompt (Kind "prompt") or by
// normalising a photo (Kind "photo"): fetched from FileURL, or, when
// PhotoInput is set, the asset blob the assignment's Inputs name so.
type AvatarJob struct {
	Kind       string `json:"kind"`
	Name       string `json:"name,omitempty"`
	Gender     string `json:"gender,omitempty"`
	Prompt     string `json:"prompt,omitempty"`
	FileURL    string `json:"file_url,omitempty"`
	PhotoInput string `json:"photo_input,omitempty"`
}

// SpeechJob is a text to speak with a voice.
type SpeechJob struct {
	Text    string `json:"text"`
	VoiceID string `json:"voice_id"`
}

// ProgressRequest reports a task's percent (0..100).
type ProgressRequest struct {
	Token   uint64  `json:"token"`
	Percent float64 `json:"percent"`
}

// CompleteRequest finishes a task. Artifacts name the blobs the task uploaded
// (file name -> blob key). A plan task reports Scenes, the number of scenes it
// planned; a final task (finalize, composite) reports DurationSeconds, the
// measured length of the delivered video.
type CompleteRequest struct {
	Token           uint64            `json:"token"`
	Artifacts       map[string]string `json:"artifacts"`
	Scenes          int               `json:"scenes,omitempty"`
	DurationSeconds float64           `json:"duration_seconds,omitempty"`
}

// FailRequest gives a task back as failed; Reason reaches the video's error
// message if the video fails.
type FailRequest struct {
	Token  uint64 `json:"token"`
	Reason string `json:"reason"`
	// Permanent says no attempt can succeed: the node found the video's
	// own input unusable (an input image that answers 404, is not an
	// image, or whose server's certificate is for another name), so the
	// video fails now instead of being retried. A control plane of an
	// older release ignores it and retries, as before.
	Permanent bool `json:"permanent,omitempty"`
}

// Artifact file names the final tasks upload. The control plane serves them as
// the video's URLs.
const (
	ArtifactVideo           = "video.mp4"
	ArtifactVideoNoCaptions = "video_no_captions.mp4"
	ArtifactCaptionsSRT     = "captions.srt"
	ArtifactCaptionsVTT     = "captions.vtt"
	ArtifactPoster          = "poster.jpg"
	// ArtifactAvatar is an avatar job's picture: a square PNG.
	ArtifactAvatar = "avatar.png"
	// ArtifactSpeech is a speech job's audio: AAC in an MP4 container.
	ArtifactSpeech = "speech.m4a"
)

// CodeStaleLease is the error code of a report about a lease the node no longer holds.
const CodeStaleLease = "stale_lease"

// Stage runners a node offers, advertised among its tools (Capacity.Tools)
// while the runner passes its health check: an OpenAI-compatible planner
// (stage plan) and a lip-sync avatar runner (stage avatar). The control
// plane routes an auto video's plan and composite tasks by them.
const (
	ToolPlanner = "runner:plan"
	ToolAvatar  = "runner:avatar"
)
