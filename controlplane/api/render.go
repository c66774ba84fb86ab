package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// PollIntervalSeconds is the polling interval suggested on every video.
const PollIntervalSeconds = 5

type progressJSON struct {
	// QueuePosition is 1 for the next video to start, 0 once rendering.
	QueuePosition uint64 `json:"queue_position"`
	Percent       int    `json:"percent"`
	// Reason and Message say why a video waits (scheduler reason codes).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Stage (additions): the step a processing video is at, with the
	// scenes of an auto video while they render.
	Stage string `json:"stage,omitempty"`
	// ETASeconds (an addition) is {"p50":…,"p90":…} or null on reads of a
	// queued video; absent elsewhere (a create's answer replays unchanged).
	ETASeconds  json.RawMessage `json:"eta_seconds,omitempty"`
	ScenesDone  *int            `json:"scenes_done,omitempty"`
	ScenesTotal *int            `json:"scenes_total,omitempty"`
}

type videoErrorJSON struct {
	Message         string `json:"message"`
	CreditsRefunded bool   `json:"credits_refunded"`
}

// cancellationJSON is on a canceled video: an addition to the contract.
type cancellationJSON struct {
	CreditsRefunded int64 `json:"credits_refunded"`
	CanceledAt      int64 `json:"canceled_at"`
}

type previewJSON struct {
	ImageURL   string `json:"image_url"`
	ImageNote  string `json:"image_note"`
	Message    string `json:"message"`
	UpgradeURL string `json:"upgrade_url"`
}

// videoJSON is the contract's video object. Field order is fixed so that the same
// video always encodes to the same bytes (idempotent replays depend on it).
type videoJSON struct {
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
	// The rest of the request, echoed as the render uses it (defaults
	// filled in), so a client can check what a video was made with.
	wire.VideoOptions
	CreditsCharged     int64             `json:"credits_charged"`
	PollInterval       int               `json:"poll_interval_seconds"`
	Progress           *progressJSON     `json:"progress,omitempty"`
	VideoURL           string            `json:"video_url,omitempty"`
	VideoURLNoCaptions string            `json:"video_url_no_captions,omitempty"`
	CaptionURL         string            `json:"caption_url,omitempty"`
	CaptionURLSRT      string            `json:"caption_url_srt,omitempty"`
	PosterURL          string            `json:"poster_url,omitempty"`
	Error              *videoErrorJSON   `json:"error,omitempty"`
	Preview            *previewJSON      `json:"preview,omitempty"`
	Cancellation       *cancellationJSON `json:"cancellation,omitempty"`
	CreatedAt          int64             `json:"created_at"`
}

// previewNote and previewMessage are shown with every preview.
const (
	previewNote    = "Low-resolution still of the project; display it blurred."
	previewMessage = "This free project is prepared but not rendered. Upgrade to Pro or Max, then call POST /v1/videos/{id}/render to render it at no charge."
)

// videoView renders v. urlExpiry is when signed file URLs in it stop working.
func (a *API) videoView(q fsm.QueuedVideo, urlExpiry time.Time) videoJSON {
	v := q.Video
	s := v.Spec
	out := videoJSON{
		ID: v.ID, Object: "video", Mode: s.Mode, Model: s.Model, Operation: s.Operation,
		Status: v.Status, Name: s.Name, Prompt: s.Prompt, DurationSeconds: s.DurationSeconds,
		Resolution: s.Resolution, AspectRatio: s.AspectRatio, Orientation: s.Orientation, VideoOptions: s.Options(),
		CreditsCharged: v.CreditsCharged, PollInterval: PollIntervalSeconds,
		CreatedAt: time.Unix(0, v.CreatedAt).Unix(),
	}
	if s.FolderID != "" {
		f := s.FolderID
		out.FolderID = &f
	}
	switch v.Status {
	case fsm.StatusQueued, fsm.StatusProcessing:
		out.Progress = &progressJSON{QueuePosition: q.QueuePosition, Percent: v.Percent, Reason: q.WaitReason, Message: q.WaitMessage, Stage: q.Stage}
		if v.Status == fsm.StatusQueued && q.Wait != nil {
			out.Progress.ETASeconds = etaJSON(*q.Wait)
		}
		if q.Stage == scheduler.StageRenderingScenes {
			out.Progress.ScenesDone, out.Progress.ScenesTotal = &q.ScenesDone, &q.ScenesTotal
		}
	case fsm.StatusCompleted:
		out.VideoURL = a.fileURL(v.Outputs.Video, urlExpiry)
		out.VideoURLNoCaptions = a.fileURL(v.Outputs.VideoNoCaptions, urlExpiry)
		out.CaptionURL = a.fileURL(v.Outputs.Captions, urlExpiry)
		out.CaptionURLSRT = a.fileURL(v.Outputs.CaptionsSRT, urlExpiry)
		out.PosterURL = a.fileURL(v.Outputs.Poster, urlExpiry)
	case fsm.StatusFailed:
		out.Error = &videoErrorJSON{Message: v.ErrorMessage, CreditsRefunded: v.CreditsRefunded}
	case fsm.StatusCanceled:
		out.Cancellation = &cancellationJSON{CreditsRefunded: v.RefundedCredits, CanceledAt: time.Unix(0, v.FinishedAt).Unix()}
	case fsm.StatusPreview:
		out.Preview = &previewJSON{
			ImageURL:   a.cfg.Signer.URL(previewPath(v.ID), urlExpiry),
			ImageNote:  previewNote,
			Message:    previewMessage,
			UpgradeURL: a.upgradeURL(),
		}
	}
	return out
}

func previewPath(videoID string) string { return "/files/previews/" + videoID + ".png" }

func (a *API) fileURL(key string, exp time.Time) string {
	if key == "" {
		return ""
	}
	return a.cfg.Signer.URL("/files/"+key, exp)
}

// readExpiry is the expiry of file URLs in a read: a whole hour ahead of the start
// of the current hour, so repeated polls within an hour see the same URLs.
func (a *API) readExpiry() time.Time {
	return a.cfg.Now().Truncate(time.Hour).Add(25 * time.Hour)
}

// createExpiry is the expiry of file URLs in a create response; it depends only on
// the video, so an idempotent replay carries the same URL.
func createExpiry(v fsm.Video) time.Time {
	return time.Unix(0, v.CreatedAt+fsm.IdempotencyTTL).Add(time.Hour)
}

// etaJSON is a wait estimate as eta_seconds: its range, or null.
func etaJSON(w fsm.WaitEstimate) json.RawMessage {
	if !w.Known {
		return json.RawMessage("null")
	}
	return json.RawMessage(fmt.Sprintf(`{"p50":%d,"p90":%d}`, w.P50, w.P90))
}
