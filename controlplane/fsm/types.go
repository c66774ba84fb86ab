package fsm

import "github.com/vidfarm/vidfarm/scheduler/wire"

// Plans an account can be on. Premium plans render; the free plan gets one preview.
const (
	PlanFree = "free"
	PlanPro  = "pro"
	PlanMax  = "max"
)

// ValidPlan reports whether p is a plan vidfarm knows.
func ValidPlan(p string) bool { return p == PlanFree || p == PlanPro || p == PlanMax }

// Premium reports whether plan p may render.
func Premium(p string) bool { return p == PlanPro || p == PlanMax }

// Video statuses, as the contract names them.
const (
	StatusQueued     = "queued"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusPreview    = "preview"
)

// Video modes.
const (
	ModeAuto   = "auto"
	ModeManual = "manual"
)

// Account is a customer: its plan, balance and free-project flag. Times are Unix
// nanoseconds stamped by the leader.
type Account struct {
	ID             string `msgpack:"id"`
	Name           string `msgpack:"name"`
	Plan           string `msgpack:"plan"`
	Credits        int64  `msgpack:"credits"`
	FreeVideoUsed  bool   `msgpack:"free_used"`
	PreviewVideoID string `msgpack:"preview_video"`
	CreatedAt      int64  `msgpack:"created_at"`
}

// Key is an API key. Only the SHA-256 of the secret is kept.
type Key struct {
	ID        string   `msgpack:"id"`
	AccountID string   `msgpack:"account"`
	Hash      [32]byte `msgpack:"hash"`
	Hint      string   `msgpack:"hint"` // the first characters, to tell keys apart in listings
	CreatedAt int64    `msgpack:"created_at"`
	RevokedAt int64    `msgpack:"revoked_at"` // 0 while valid
}

// Folder files videos of one account.
type Folder struct {
	ID        string `msgpack:"id"`
	AccountID string `msgpack:"account"`
	Name      string `msgpack:"name"`
	CreatedAt int64  `msgpack:"created_at"`
}

// Spec is a validated video request with every default filled in: what the render
// farm needs to produce the video. Fields of the other mode stay zero.
type Spec struct {
	Mode            string `msgpack:"mode"`
	Prompt          string `msgpack:"prompt"`
	Name            string `msgpack:"name"`
	FolderID        string `msgpack:"folder"`
	DurationSeconds int    `msgpack:"duration"`

	// auto
	AvatarID     string   `msgpack:"avatar,omitempty"`
	VoiceID      string   `msgpack:"voice,omitempty"`
	BrandKitID   string   `msgpack:"brand_kit,omitempty"`
	StyleID      string   `msgpack:"style_id,omitempty"`
	FileAssetIDs []string `msgpack:"assets,omitempty"`
	Orientation  string   `msgpack:"orientation,omitempty"`

	// manual
	Model             string   `msgpack:"model,omitempty"`
	Operation         string   `msgpack:"operation,omitempty"`
	Resolution        string   `msgpack:"resolution,omitempty"`
	AspectRatio       string   `msgpack:"aspect_ratio,omitempty"`
	ImageURL          string   `msgpack:"image_url,omitempty"`
	FirstFrameURL     string   `msgpack:"first_frame_url,omitempty"`
	LastFrameURL      string   `msgpack:"last_frame_url,omitempty"`
	ImageURLs         []string `msgpack:"image_urls,omitempty"`
	NegativePrompt    *string  `msgpack:"negative_prompt,omitempty"`
	Seed              *int64   `msgpack:"seed,omitempty"`
	GenerateAudio     *bool    `msgpack:"generate_audio,omitempty"`
	Style             *string  `msgpack:"style,omitempty"`
	MovementAmplitude *string  `msgpack:"movement_amplitude,omitempty"`
	CfgScale          *float64 `msgpack:"cfg_scale,omitempty"`
	CameraFixed       *bool    `msgpack:"camera_fixed,omitempty"`
	AutoFix           *bool    `msgpack:"auto_fix,omitempty"`
}

// Options are the options s sets, as a task and the video object carry them.
func (s *Spec) Options() wire.VideoOptions {
	return wire.VideoOptions{
		AvatarID: s.AvatarID, VoiceID: s.VoiceID, BrandKitID: s.BrandKitID, StyleID: s.StyleID, FileAssetIDs: s.FileAssetIDs,
		ImageURL: s.ImageURL, FirstFrameURL: s.FirstFrameURL, LastFrameURL: s.LastFrameURL, ImageURLs: s.ImageURLs,
		NegativePrompt: s.NegativePrompt, Seed: s.Seed, GenerateAudio: s.GenerateAudio, Style: s.Style,
		MovementAmplitude: s.MovementAmplitude, CfgScale: s.CfgScale, CameraFixed: s.CameraFixed, AutoFix: s.AutoFix,
	}
}

// Outputs are the blob keys of a finished video.
type Outputs struct {
	Video           string `msgpack:"video"`
	VideoNoCaptions string `msgpack:"video_no_captions,omitempty"`
	Captions        string `msgpack:"captions,omitempty"` // WebVTT
	CaptionsSRT     string `msgpack:"captions_srt,omitempty"`
	Poster          string `msgpack:"poster,omitempty"`
}

// Video is one render project and where it stands.
type Video struct {
	ID             string `msgpack:"id"`
	AccountID      string `msgpack:"account"`
	Spec           Spec   `msgpack:"spec"`
	Status         string `msgpack:"status"`
	CreditsCharged int64  `msgpack:"charged"`
	// Price is what the video would cost; for a preview it is what rendering would
	// have cost, shown to help the upgrade decision.
	Price           int64  `msgpack:"price"`
	Percent         int    `msgpack:"percent"`
	ErrorMessage    string `msgpack:"error,omitempty"`
	CreditsRefunded bool   `msgpack:"refunded"`
	// RefundedCredits is what a cancel refunded (CancelRefund); a failed
	// video is refunded its whole charge and leaves it 0.
	RefundedCredits     int64   `msgpack:"refunded_credits,omitempty"`
	RenderedFromPreview bool    `msgpack:"from_preview"`
	Outputs             Outputs `msgpack:"outputs"`
	// Artifacts are the blobs its finished tasks produced, "task/file" -> key.
	Artifacts  map[string]string `msgpack:"artifacts,omitempty"`
	CreatedAt  int64             `msgpack:"created_at"`
	UpdatedAt  int64             `msgpack:"updated_at"`
	StartedAt  int64             `msgpack:"started_at"`
	FinishedAt int64             `msgpack:"finished_at"`
	// Timings are its tasks' service times (lease granted to completed),
	// in the order they finished: what a twin of the farm (the admin
	// history, bench sim --from-farm) calibrates its model against.
	Timings []TaskTiming `msgpack:"timings,omitempty"`
	// CreatedEvent is what the video's video.created event says that the
	// rest of its record does not, once DerivedCreatedEvents is applied:
	// the event is then read from the record (createdEvent), not logged.
	// Zero for a video created before, so its record encodes as it did.
	CreatedEvent CreatedEventInfo `msgpack:"created_event,omitempty"`
}

// Refunded is how many of its charged credits v's account got back: the
// whole charge of a failed video (its RefundedCredits stay 0), what a
// cancel refunded, else none. CreditsRefunded alone does not say it: a
// cancel mid-render refunds only what was not rendered.
func (v *Video) Refunded() int64 {
	if v.CreditsRefunded && v.RefundedCredits == 0 {
		return v.CreditsCharged
	}
	return v.RefundedCredits
}

// CreatedEventInfo is the part of a video.created event that its video's
// record does not keep: its place in the account's event log, what the
// video's progress said then, and what the record has changed since (its
// duration, set from the rendered file; a preview's status).
type CreatedEventInfo struct {
	Seq             uint64 `msgpack:"seq"`
	QueuePosition   uint64 `msgpack:"queue_position,omitempty"`
	WaitReason      string `msgpack:"wait_reason,omitempty"`
	WaitMessage     string `msgpack:"wait_message,omitempty"`
	DurationSeconds int    `msgpack:"duration,omitempty"`
	Preview         bool   `msgpack:"preview,omitempty"`
}

// TaskTiming is how long one task of a video took on the node that
// completed it.
type TaskTiming struct {
	Kind  string `msgpack:"kind"`
	Model string `msgpack:"model,omitempty"` // a GPU task's model
	// GPU is the kind (NVML product name) of the GPUs the task held; ""
	// for a CPU task.
	GPU    string `msgpack:"gpu,omitempty"`
	Millis int64  `msgpack:"ms"`
}

// Idempotency remembers what an Idempotency-Key produced, for 24 hours.
type Idempotency struct {
	AccountID string   `msgpack:"account"`
	Key       string   `msgpack:"key"`
	BodyHash  [32]byte `msgpack:"body_hash"`
	VideoID   string   `msgpack:"video"`
	// Original is the video exactly as the creating request returned it, so a replay
	// answers byte for byte what the first response said.
	Original      Video  `msgpack:"original"`
	QueuePosition uint64 `msgpack:"queue_position"`
	WaitReason    string `msgpack:"wait_reason,omitempty"`
	WaitMessage   string `msgpack:"wait_message,omitempty"`
	CreatedAt     int64  `msgpack:"created_at"`
	// SpecByRef says Original was kept without its spec but for the
	// duration (SpecsByReference): a replay reads it from the video's
	// record. Absent before, so an older record encodes as it did.
	SpecByRef bool `msgpack:"spec_ref,omitempty"`
}

// IdempotencyTTL is how long an Idempotency-Key is remembered, in nanoseconds.
const IdempotencyTTL int64 = 24 * 3600 * 1e9
