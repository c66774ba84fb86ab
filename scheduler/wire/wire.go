// Package wire holds the JSON messages of the agent protocol: what a GPU node's
// agent and the control plane's agent listener say to each other. Both sides import
// it; neither imports the other.
//
// The protocol, all JSON over HTTP on the control plane's agent listener:
//
//	POST /agent/v1/register              Bearer <agent token>   RegisterRequest  -> 201 RegisterResponse
//	POST /agent/v1/heartbeat             Bearer <credential>    HeartbeatRequest -> 200 HeartbeatResponse
//	POST /agent/v1/lease?wait=<seconds>  Bearer <credential>    LeaseRequest     -> 200 Assignment | 204 (nothing to do)
//	POST /agent/v1/tasks/{id}/progress   Bearer <credential>    ProgressRequest  -> 204
//	POST /agent/v1/tasks/{id}/complete   Bearer <credential>    CompleteRequest  -> 204
//	POST /agent/v1/tasks/{id}/fail       Bearer <credential>    FailRequest      -> 204
//	POST /agent/v1/deregister            Bearer <credential>                     -> 204 (leases handed back, not failed)
//	PUT  /agent/v1/blobs/{key...}        Bearer <credential>    raw bytes        -> 201
//	GET  /agent/v1/blobs/{key...}        Bearer <credential>                     -> 200 raw bytes
//
// Blob keys a task writes must be "videos/<video id>/<task name>/<file name>".
//
// A report about a lease the node no longer holds (it expired and was given to
// another node, or its video failed) is refused with 409 and error code
// "stale_lease": the agent must drop that task and never retry the report. 401 means
// the credential is unknown: register again. Errors use the API's error envelope.
package wire

import (
	"time"

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
}

// RegisterRequest introduces a node. Name is the operator's name for it (the
// hostname by default); registering again under the same name replaces the old
// node, whose leases are given back.
type RegisterRequest struct {
	Name     string   `json:"name"`
	Capacity Capacity `json:"capacity"`
}

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
type HeartbeatRequest struct {
	Leases   []LeaseReport `json:"leases"`
	Draining bool          `json:"draining,omitempty"`
}

// HeartbeatResponse lists the leases that were not renewed: the node must stop
// those tasks and discard their results.
type HeartbeatResponse struct {
	Stale []string `json:"stale,omitempty"` // task ids
}

// LeaseRequest asks for one task.
type LeaseRequest struct{}

// Video is what a task needs to know of its video (the validated request).
type Video struct {
	ID              string `json:"id"`
	Mode            string `json:"mode"`
	Prompt          string `json:"prompt"`
	DurationSeconds int    `json:"duration_seconds"`

	AvatarID     string   `json:"avatar_id,omitempty"`
	VoiceID      string   `json:"voice_id,omitempty"`
	BrandKitID   string   `json:"brand_kit_id,omitempty"`
	StyleID      string   `json:"style_id,omitempty"`
	FileAssetIDs []string `json:"file_asset_ids,omitempty"`
	Orientation  string   `json:"orientation,omitempty"`

	Model             string   `json:"model,omitempty"`
	Operation         string   `json:"operation,omitempty"`
	Resolution        string   `json:"resolution,omitempty"`
	AspectRatio       string   `json:"aspect_ratio,omitempty"`
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

// Assignment is a leased task: run it, report progress, upload its artifacts,
// complete or fail it before Deadline (heartbeats move the deadline).
type Assignment struct {
	TaskID   string         `json:"task_id"`
	Token    uint64         `json:"token"`
	Name     string         `json:"name"` // "render", "plan", "scene-0003", ...
	Kind     scheduler.Kind `json:"kind"`
	Attempt  int            `json:"attempt"`
	GPUIDs   []string       `json:"gpu_ids,omitempty"`
	Deadline time.Time      `json:"deadline"`
	Video    Video          `json:"video"`
	// Inputs are the artifacts of the video's finished tasks, by name
	// ("plan/plan.json", "tts/voice.json", "scene-0001/clip.mp4", "render/clip.mp4"),
	// each a blob key to GET.
	Inputs map[string]string `json:"inputs,omitempty"`
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
}

// Artifact file names the final tasks upload. The control plane serves them as
// the video's URLs.
const (
	ArtifactVideo           = "video.mp4"
	ArtifactVideoNoCaptions = "video_no_captions.mp4"
	ArtifactCaptionsSRT     = "captions.srt"
	ArtifactCaptionsVTT     = "captions.vtt"
	ArtifactPoster          = "poster.jpg"
)

// CodeStaleLease is the error code of a report about a lease the node no longer holds.
const CodeStaleLease = "stale_lease"
