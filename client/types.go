package client

import (
	"encoding/json"
	"net/http"
)

// Video statuses. Canceled is an addition to the original contract.
const (
	StatusQueued     = "queued"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusPreview    = "preview"
	StatusCanceled   = "canceled"
)

// Video is the Video schema of the OpenAPI document. Which optional part is set
// follows Status: Progress while queued or processing, VideoURL when completed,
// Error when failed, Preview when preview, Cancellation when canceled.
type Video struct {
	ID              string  `json:"id"`
	Object          string  `json:"object"`
	Mode            string  `json:"mode"`
	Model           string  `json:"model,omitempty"`
	Operation       string  `json:"operation,omitempty"`
	Status          string  `json:"status"`
	Name            string  `json:"name"`
	FolderID        *string `json:"folder_id"`
	Prompt          string  `json:"prompt"`
	DurationSeconds int     `json:"duration_seconds"`
	Resolution      string  `json:"resolution,omitempty"`
	AspectRatio     string  `json:"aspect_ratio,omitempty"`
	Orientation     string  `json:"orientation,omitempty"`
	// The options the request set, echoed as the render uses them (auto:
	// AvatarID to FileAssetIDs; manual: the rest); empty when none.
	AvatarID            string             `json:"avatar_id,omitempty"`
	VoiceID             string             `json:"voice_id,omitempty"`
	BrandKitID          string             `json:"brand_kit_id,omitempty"`
	StyleID             string             `json:"style_id,omitempty"`
	FileAssetIDs        []string           `json:"file_asset_ids,omitempty"`
	ImageURL            string             `json:"image_url,omitempty"`
	FirstFrameURL       string             `json:"first_frame_url,omitempty"`
	LastFrameURL        string             `json:"last_frame_url,omitempty"`
	ImageURLs           []string           `json:"image_urls,omitempty"`
	NegativePrompt      *string            `json:"negative_prompt,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	GenerateAudio       *bool              `json:"generate_audio,omitempty"`
	Style               *string            `json:"style,omitempty"`
	MovementAmplitude   *string            `json:"movement_amplitude,omitempty"`
	CfgScale            *float64           `json:"cfg_scale,omitempty"`
	CameraFixed         *bool              `json:"camera_fixed,omitempty"`
	AutoFix             *bool              `json:"auto_fix,omitempty"`
	CreditsCharged      int64              `json:"credits_charged"`
	PollIntervalSeconds int                `json:"poll_interval_seconds"`
	Progress            *VideoProgress     `json:"progress,omitempty"`
	VideoURL            string             `json:"video_url,omitempty"`
	VideoURLNoCaptions  string             `json:"video_url_no_captions,omitempty"`
	CaptionURL          string             `json:"caption_url,omitempty"`
	CaptionURLSRT       string             `json:"caption_url_srt,omitempty"`
	PosterURL           string             `json:"poster_url,omitempty"`
	Error               *VideoError        `json:"error,omitempty"`
	Preview             *VideoPreview      `json:"preview,omitempty"`
	CreatedAt           int64              `json:"created_at"`
	Cancellation        *VideoCancellation `json:"cancellation,omitempty"`
	// Replayed is set on a create's answer that the server replayed from an
	// earlier request with the same Idempotency-Key (Idempotent-Replayed:
	// true) rather than made now: with a key of the caller's
	// (WithIdempotencyKey), the video was made by an earlier call; with the
	// client's own key, by an earlier attempt of this call whose answer was
	// lost. Either way nothing more was charged. Not part of the JSON.
	Replayed bool `json:"-"`
}

func (v *Video) answered(h http.Header) { v.Replayed = h.Get("Idempotent-Replayed") == "true" }

// Final reports whether the video will not change any more: completed, failed,
// canceled, or a free plan's preview.
func (v *Video) Final() bool {
	switch v.Status {
	case StatusCompleted, StatusFailed, StatusCanceled, StatusPreview:
		return true
	}
	return false
}

// VideoProgress is present while a video is queued or processing.
type VideoProgress struct {
	QueuePosition int    `json:"queue_position"`
	Percent       int    `json:"percent"`
	Reason        string `json:"reason,omitempty"`
	Message       string `json:"message,omitempty"`
	// Stage is planning, voicing, rendering_scenes, compositing (auto) or
	// rendering, finalizing (manual); empty while queued.
	Stage       string `json:"stage,omitempty"`
	ScenesDone  int    `json:"scenes_done,omitempty"`
	ScenesTotal int    `json:"scenes_total,omitempty"`
	// ETASeconds is set on reads of a queued video when the farm can estimate
	// the wait; nil when it cannot (or on the create answer).
	ETASeconds *ETA `json:"eta_seconds,omitempty"`
}

// ETA is how long a queued video may wait before it starts, in seconds.
type ETA struct {
	P50 int `json:"p50"`
	P90 int `json:"p90"`
}

// VideoError says why a video failed.
type VideoError struct {
	Message         string `json:"message"`
	CreditsRefunded bool   `json:"credits_refunded"`
}

// VideoPreview is a free plan's still in place of a video.
type VideoPreview struct {
	ImageURL   string `json:"image_url"`
	ImageNote  string `json:"image_note"`
	Message    string `json:"message"`
	UpgradeURL string `json:"upgrade_url"`
}

// VideoCancellation is set on a canceled video.
type VideoCancellation struct {
	CreditsRefunded int64 `json:"credits_refunded"`
	CanceledAt      int64 `json:"canceled_at"`
}

// List is one page of a list answer (VideoList, ModelList, VoiceList).
type List[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	Count   int    `json:"count"`
	Total   int    `json:"total"`
	HasMore bool   `json:"has_more"`
}

// AutoVideoRequest is the body of an auto create (the AutoVideoRequest schema).
// Mode is set by CreateAuto. Zero values are left out so the server's defaults apply.
type AutoVideoRequest struct {
	Mode            string   `json:"mode"`
	Prompt          string   `json:"prompt"`
	DurationSeconds int      `json:"duration_seconds,omitempty"`
	Name            string   `json:"name,omitempty"`
	FolderID        string   `json:"folder_id,omitempty"`
	AvatarID        string   `json:"avatar_id,omitempty"`
	VoiceID         string   `json:"voice_id,omitempty"`
	BrandKitID      string   `json:"brand_kit_id,omitempty"`
	StyleID         string   `json:"style_id,omitempty"`
	FileAssetIDs    []string `json:"file_asset_ids,omitempty"`
	Orientation     string   `json:"orientation,omitempty"`
}

// ManualVideoRequest is the body of a manual create (the ManualVideoRequest
// schema). Mode is set by CreateManual. Pointers are for fields whose zero value
// is a meaningful choice (seed 0, generate_audio false).
type ManualVideoRequest struct {
	Mode              string   `json:"mode"`
	Prompt            string   `json:"prompt"`
	Model             string   `json:"model,omitempty"`
	DurationSeconds   int      `json:"duration_seconds,omitempty"`
	Resolution        string   `json:"resolution,omitempty"`
	AspectRatio       string   `json:"aspect_ratio,omitempty"`
	Name              string   `json:"name,omitempty"`
	FolderID          string   `json:"folder_id,omitempty"`
	ImageURL          string   `json:"image_url,omitempty"`
	FirstFrameURL     string   `json:"first_frame_url,omitempty"`
	LastFrameURL      string   `json:"last_frame_url,omitempty"`
	ImageURLs         []string `json:"image_urls,omitempty"`
	NegativePrompt    string   `json:"negative_prompt,omitempty"`
	Seed              *int64   `json:"seed,omitempty"`
	GenerateAudio     *bool    `json:"generate_audio,omitempty"`
	Style             string   `json:"style,omitempty"`
	MovementAmplitude string   `json:"movement_amplitude,omitempty"`
	CFGScale          *float64 `json:"cfg_scale,omitempty"`
	CameraFixed       *bool    `json:"camera_fixed,omitempty"`
	AutoFix           *bool    `json:"auto_fix,omitempty"`
}

// Account is the answer of GET /v1/me.
type Account struct {
	Object             string       `json:"object"`
	ID                 string       `json:"id"`
	Name               string       `json:"name"`
	Plan               string       `json:"plan"`
	Premium            bool         `json:"premium"`
	Credits            int64        `json:"credits"`
	FreeVideoAvailable bool         `json:"free_video_available"`
	Links              AccountLinks `json:"links"`
}

// AccountLinks are where credits and plans are bought.
type AccountLinks struct {
	BuyCredits string `json:"buy_credits"`
	Upgrade    string `json:"upgrade"`
}

// Model is one video model of the catalog. Requirements and the parameter
// descriptions are kept as raw JSON: they are informational and keyed by
// resolution.
type Model struct {
	ID                 string           `json:"id"`
	Object             string           `json:"object"`
	Name               string           `json:"name"`
	Provider           string           `json:"provider"`
	Family             string           `json:"family"`
	Description        string           `json:"description"`
	Operations         []string         `json:"operations"`
	Resolutions        []string         `json:"resolutions"`
	Durations          []int            `json:"durations"`
	AspectRatios       []string         `json:"aspect_ratios"`
	Styles             []string         `json:"styles"`
	CreditsPerSecond   map[string]int64 `json:"credits_per_second"`
	DefaultResolution  string           `json:"default_resolution"`
	DefaultDuration    int              `json:"default_duration"`
	DefaultAspectRatio string           `json:"default_aspect_ratio"`
	MaxImages          int              `json:"max_images,omitempty"`
	Parameters         json.RawMessage  `json:"parameters"`
	Requirements       json.RawMessage  `json:"requirements"`
}

// Voice is one voice of the voiceover catalog.
type Voice struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Name     string `json:"name"`
	Language string `json:"language"`
	Gender   string `json:"gender"`
}

// Event is the body of a webhook delivery and an item of the event log (the
// Event schema).
type Event struct {
	// ID is stable across retries of one event: deduplicate on it.
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Type    string    `json:"type"`
	Created int64     `json:"created"`
	Data    EventData `json:"data"`
}

// EventData holds what an event is about: the video of a video.* event, the
// endpoint of a webhook.* event (webhook.test, webhook.disabled; Video is
// then the zero value).
type EventData struct {
	Video   Video            `json:"video"`
	Webhook *WebhookEndpoint `json:"webhook,omitempty"`
}

// Folder is one folder of the account (the Folder schema): where a video is
// filed (Video.FolderID).
type Folder struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Name   string `json:"name"`
	// CreatedAt is the creation time, Unix seconds.
	CreatedAt int64 `json:"created_at"`
}
