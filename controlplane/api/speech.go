package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

// Speech samples (POST /v1/voices/speech). The control plane has no
// espeak-ng: a sample is a render-farm task on a node whose voices make the
// catalogue, ahead of queued videos. The request waits for it, up to
// Config.SpeechWait (a sample takes about a second once a node has a free
// CPU slot), and answers 200 with audio_url; past the wait it answers 202
// with the sample's id to poll at GET /v1/voices/speech/{id}.

// MaxSpeechChars is the contract's limit on speech text.
const MaxSpeechChars = 300

// DefaultSpeechWait is how long POST /v1/voices/speech waits for the audio.
const DefaultSpeechWait = 20 * time.Second

// speechPoll is how often a waiting request looks at the sample.
const speechPoll = 50 * time.Millisecond

var speechFields = []string{"text", "voice_id"}

type speechJSON struct {
	ID              string           `json:"id"`
	Object          string           `json:"object"`
	Status          string           `json:"status"`
	VoiceID         string           `json:"voice_id"`
	Text            string           `json:"text"`
	AudioURL        string           `json:"audio_url,omitempty"`
	DurationSeconds float64          `json:"duration_seconds,omitempty"`
	Error           *avatarErrorJSON `json:"error,omitempty"`
	CreatedAt       int64            `json:"created_at"`
	PollInterval    int              `json:"poll_interval_seconds,omitempty"`
}

func (a *API) speechView(sp fsm.Speech, exp time.Time) speechJSON {
	out := speechJSON{ID: sp.ID, Object: "speech", Status: sp.Status, VoiceID: sp.VoiceID, Text: sp.Text,
		CreatedAt: time.Unix(0, sp.CreatedAt).Unix()}
	switch sp.Status {
	case fsm.StatusCompleted:
		out.AudioURL = a.fileURL(sp.Audio, exp)
		out.DurationSeconds = sp.DurationSeconds
	case fsm.StatusFailed:
		out.Error = &avatarErrorJSON{Message: sp.Error}
	default:
		out.PollInterval = 1
	}
	return out
}

// parseSpeech validates a POST /v1/voices/speech body.
func (a *API) parseSpeech(body []byte) (text, voice string, e *apierr.Error) {
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields(speechFields...)
	}
	if e != nil {
		return "", "", e
	}
	text, _, e = o.str("text")
	if e != nil {
		return "", "", e
	}
	if n := utf8.RuneCountInString(text); strings.TrimSpace(text) == "" || n > MaxSpeechChars {
		msg := fmt.Sprintf("text has %d characters; speech text is 1 to %d characters", n, MaxSpeechChars)
		if strings.TrimSpace(text) == "" {
			msg = fmt.Sprintf(`field "text" is required: 1 to %d characters to speak`, MaxSpeechChars)
		}
		return "", "", apierr.Invalid("text", msg).With("min_length", 1).With("max_length", MaxSpeechChars)
	}
	if e := checkLongText("text", text); e != nil {
		return "", "", e
	}
	voice, _, e = o.str("voice_id")
	if e != nil {
		return "", "", e
	}
	if voice == "" {
		return "", "", apierr.Invalid("voice_id", `field "voice_id" is required; GET /v1/voices lists the voices`).
			With("hint", "GET /v1/voices lists the voice ids; filter it with language, gender and search")
	}
	if a.fsm.VoiceCount() == 0 {
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeUpstreamError,
			"no render node with espeak-ng is registered, so there are no voices to speak with; retry later")
		e.Retryable, e.RetryAfter = true, 30
		return "", "", e
	}
	if e := a.checkVoice(voice); e != nil {
		return "", "", e
	}
	return text, voice, nil
}

func (a *API) createSpeech(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	body, e := readBody(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	text, voice, e := a.parseSpeech(body)
	if e == nil {
		e = a.lim.check(r.Context(), a.lim.media, "avatar create, brand-from-url, speech and uploads", p.AccountID)
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	queued, err := fsm.Do(r.Context(), a.store, &fsm.CreateSpeech{SpeechID: ids.New("sp"), AccountID: p.AccountID, Text: text, VoiceID: voice, Now: a.cfg.Now().UnixNano()})
	if err != nil {
		apierr.Write(w, r, a.fromApply(r, err))
		return
	}
	a.workQueued()
	sp := a.awaitSpeech(r.Context(), queued)
	a.writeSpeech(w, r, sp)
}

// awaitSpeech polls the local state until the sample ends, the wait is over
// or the client leaves, and returns the sample as it then stands.
func (a *API) awaitSpeech(ctx context.Context, sp fsm.Speech) fsm.Speech {
	wait := a.cfg.SpeechWait
	if wait == 0 {
		wait = DefaultSpeechWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(speechPoll)
	defer tick.Stop()
	for sp.Status == fsm.StatusQueued || sp.Status == fsm.StatusProcessing {
		select {
		case <-tick.C:
		case <-deadline.C:
			return sp
		case <-ctx.Done():
			return sp
		}
		if now, ok := a.fsm.Speech(sp.AccountID, sp.ID); ok {
			sp = now
		}
	}
	return sp
}

// writeSpeech answers with a sample: 200 once it has its audio, 202 while it
// is still being made, and 502 upstream_error if making it failed.
func (a *API) writeSpeech(w http.ResponseWriter, r *http.Request, sp fsm.Speech) {
	switch sp.Status {
	case fsm.StatusCompleted:
		apierr.WriteJSON(w, http.StatusOK, a.speechView(sp, a.readExpiry()))
	case fsm.StatusFailed:
		e := apierr.New(http.StatusBadGateway, apierr.CodeUpstreamError, "the render node could not speak the text: "+sp.Error).
			With("speech_id", sp.ID).With("reason", sp.Error)
		e.Retryable = true
		apierr.Write(w, r, e)
	default:
		w.Header().Set("Location", "/v1/voices/speech/"+sp.ID)
		apierr.WriteJSON(w, http.StatusAccepted, a.speechView(sp, a.readExpiry()))
	}
}

func (a *API) getSpeech(w http.ResponseWriter, r *http.Request) {
	sp, ok := a.fsm.Speech(principalOf(r).AccountID, chi.URLParam(r, "id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("speech sample"))
		return
	}
	// A poll reads the sample as it stands, whatever its status.
	apierr.WriteJSON(w, http.StatusOK, a.speechView(sp, a.readExpiry()))
}
