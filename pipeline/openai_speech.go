package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Speaker speaks one line of narration into a WAV file and returns the
// audio's measured length. Tools (espeak-ng), SpeechServer and
// SpeechRouter are Speakers.
type Speaker interface {
	Synthesize(ctx context.Context, text, voiceID, outWAV string) (time.Duration, error)
}

var (
	_ Speaker = (*Tools)(nil)
	_ Speaker = (*SpeechServer)(nil)
	_ Speaker = (*SpeechRouter)(nil)
)

// Limits of a SpeechServer.
const (
	// MaxServerSpeechChars is the longest line a SpeechServer is sent:
	// OpenAI's limit for /v1/audio/speech input.
	MaxServerSpeechChars = 4096
	DefaultSpeechTimeout = 2 * time.Minute // one line
	maxSpeechAnswer      = 64 << 20        // minutes of 24 kHz 16-bit audio
)

// SpeechServer speaks through an OpenAI-compatible text-to-speech server:
// Kokoro-FastAPI, LocalAI, openedai-speech, or OpenAI (runner kind
// "openai-speech", stage "tts"). It POSTs /v1/audio/speech
// (https://platform.openai.com/docs/api-reference/audio/createSpeech) with
// {model, input, voice, response_format: "wav"} and checks that the answer
// is a WAV file (an audio/wav Content-Type, or application/octet-stream,
// and a RIFF/WAVE header with a format and a data chunk), whose length it
// measures: the captions are timed from it.
//
// Servers that stream WAV (Kokoro-FastAPI streams unless asked not to, its
// api/src/routers/openai_compatible.py) cannot know the data size when
// they write the header and leave 0 or 0xFFFFFFFF there; the file is
// written with the sizes of the bytes received. Kokoro-FastAPI's errors
// come as FastAPI's {"detail": {...}}, which apiError reads too.
//
// Voices are the server's voices vidfarm offers, from the runners file:
// the id is both vidfarm's voice id and the voice name sent to the server.
type SpeechServer struct {
	URL     string // the server ("http://127.0.0.1:8880") or its API root (".../v1")
	Model   string // e.g. "kokoro", "tts-1"
	APIKey  string // sent as a bearer token when set
	Voices  []Voice
	Client  *http.Client
	Timeout time.Duration // one line (0 = DefaultSpeechTimeout)

	wait func(context.Context, time.Duration) error
}

func (s *SpeechServer) api() openAIAPI {
	return newOpenAIAPI(s.URL, s.APIKey, s.Client, s.Timeout, DefaultSpeechTimeout, s.wait)
}

func (s *SpeechServer) where() string {
	return fmt.Sprintf("openai-speech model %q at %s", s.Model, RedactURL(s.URL))
}

// Check reports what is wrong with the configuration: the URL, the model
// name and each voice (an id, a name, a language, a gender of "male" or
// "female", ids unique).
func (s *SpeechServer) Check() error {
	if _, err := s.api().endpoint("/audio/speech"); err != nil {
		return err
	}
	if s.Model == "" {
		return invalidf("%s: no model name", s.where())
	}
	if len(s.Voices) == 0 {
		return invalidf("%s: no voices", s.where())
	}
	seen := map[string]bool{}
	for _, v := range s.Voices {
		switch {
		case !validVoiceID(v.ID) || len(v.ID) > 64:
			return invalidf("%s: voice id %q: want 1 to 64 of a-z, 0-9, '-', '+', '_'", s.where(), v.ID)
		case seen[v.ID]:
			return invalidf("%s: voice id %q appears twice", s.where(), v.ID)
		case v.Name == "" || len(v.Name) > 128 || oneLine(v.Name) != v.Name:
			return invalidf("%s: voice %s needs a name of 1 to 128 bytes on one line", s.where(), v.ID)
		case !validLanguage(v.Language):
			return invalidf("%s: voice %s: language %q: want a code such as en-us (a-z, 0-9, '-')", s.where(), v.ID, v.Language)
		case v.Gender != "male" && v.Gender != "female":
			return invalidf("%s: voice %s: gender %q, want male or female", s.where(), v.ID, v.Gender)
		}
		seen[v.ID] = true
	}
	return nil
}

// validLanguage reports whether code is a lower-case language code, as
// GET /v1/voices gives them ("en-us", "yue").
func validLanguage(code string) bool {
	if code == "" || len(code) > 35 || code[0] == '-' {
		return false
	}
	return strings.IndexFunc(code, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }) < 0
}

// ListVoices returns the configured voices; callers may modify the slice.
func (s *SpeechServer) ListVoices() []Voice { return append([]Voice(nil), s.Voices...) }

// Health checks that the server answers and serves Model (GET /v1/models).
func (s *SpeechServer) Health(ctx context.Context) error {
	if err := s.api().modelsHealth(ctx, s.Model); err != nil {
		return fmt.Errorf("%s: %w", s.where(), err)
	}
	return nil
}

// speechRequest is the body of POST /v1/audio/speech.
type speechRequest struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	ResponseFormat string `json:"response_format"`
}

// Synthesize implements Speaker. voiceID must be one of Voices.
func (s *SpeechServer) Synthesize(ctx context.Context, text, voiceID, outWAV string) (time.Duration, error) {
	text = oneLine(text) // a line break is no part of a narration line
	if text == "" {
		return 0, invalidf("speech text is empty")
	}
	if n := len([]rune(text)); n > MaxServerSpeechChars {
		return 0, invalidf("speech text has %d characters, at most %d", n, MaxServerSpeechChars)
	}
	if !s.hasVoice(voiceID) {
		return 0, fmt.Errorf("%w: %q is not a voice of %s", ErrUnknownVoice, voiceID, s.where())
	}
	ans, err := s.api().call(ctx, http.MethodPost, "/audio/speech",
		speechRequest{Model: s.Model, Input: text, Voice: voiceID, ResponseFormat: "wav"}, maxSpeechAnswer)
	if err != nil {
		return 0, fmt.Errorf("%s, voice %s: %w", s.where(), voiceID, err)
	}
	if mt, _, _ := mime.ParseMediaType(ans.header.Get("Content-Type")); !wavType(mt) {
		return 0, fmt.Errorf("%s, voice %s: %w: it answered %q, not WAV audio; the server must support response_format wav",
			s.where(), voiceID, ErrRunnerFailed, ans.header.Get("Content-Type"))
	}
	wav, err := fixWAVSizes(ans.body)
	if err != nil {
		return 0, fmt.Errorf("%s, voice %s: %w: the answer is not a WAV file: %v", s.where(), voiceID, ErrRunnerFailed, err)
	}
	if err := os.MkdirAll(filepath.Dir(outWAV), 0o755); err != nil {
		return 0, fmt.Errorf("synthesize: %w", err)
	}
	if err := os.WriteFile(outWAV, wav, 0o644); err != nil {
		return 0, fmt.Errorf("synthesize: %w", err)
	}
	d, err := WAVDuration(outWAV)
	if err != nil {
		return 0, fmt.Errorf("%s, voice %s: %w", s.where(), voiceID, err)
	}
	return d, nil
}

func (s *SpeechServer) hasVoice(id string) bool {
	for _, v := range s.Voices {
		if v.ID == id {
			return true
		}
	}
	return false
}

// wavType reports whether a Content-Type may hold WAV audio: the names in
// use for it, and application/octet-stream, which some servers send for
// every format.
func wavType(mt string) bool {
	switch mt {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "application/octet-stream":
		return true
	}
	return false
}

// fixWAVSizes checks that b is a RIFF/WAVE file with a fmt chunk (with a
// byte rate) before a non-empty data chunk, and sets the RIFF and data
// sizes to the bytes present when the header's are placeholders (0, or
// more than there is). It modifies b.
func fixWAVSizes(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, errors.New("no RIFF/WAVE header")
	}
	haveFmt := false
	for pos := 12; pos+8 <= len(b); {
		id, size := string(b[pos:pos+4]), int(binary.LittleEndian.Uint32(b[pos+4:pos+8]))
		body := pos + 8
		switch id {
		case "fmt ":
			if body+16 > len(b) || binary.LittleEndian.Uint32(b[body+8:body+12]) == 0 {
				return nil, errors.New("bad fmt chunk")
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return nil, errors.New("data before the fmt chunk")
			}
			if have := len(b) - body; size == 0 || size > have {
				binary.LittleEndian.PutUint32(b[pos+4:pos+8], uint32(have))
				binary.LittleEndian.PutUint32(b[4:8], uint32(len(b)-8))
				size = have
			}
			if size == 0 {
				return nil, errors.New("no audio in the data chunk")
			}
			return b, nil
		}
		pos = body + size + size%2
	}
	return nil, errors.New("no data chunk")
}

// SpeechRouter speaks each voice with the Speaker that offers it: a
// SpeechServer's voices with that server, every other id with Default
// (espeak-ng's Tools; nil on a node without espeak-ng). A server's voice
// id hides an espeak-ng voice of the same id.
type SpeechRouter struct {
	Default Speaker
	servers map[string]*SpeechServer
	voices  []Voice // the servers' voices, in configuration order
}

// NewSpeechRouter routes the voices of servers, each checked
// (SpeechServer.Check); no voice id may belong to two servers.
func NewSpeechRouter(def Speaker, servers ...*SpeechServer) (*SpeechRouter, error) {
	r := &SpeechRouter{Default: def, servers: map[string]*SpeechServer{}}
	for _, s := range servers {
		if err := s.Check(); err != nil {
			return nil, err
		}
		for _, v := range s.Voices {
			if other, ok := r.servers[v.ID]; ok {
				return nil, invalidf("voice id %q is offered by both %s and %s", v.ID, other.where(), s.where())
			}
			r.servers[v.ID] = s
			r.voices = append(r.voices, v)
		}
	}
	return r, nil
}

// Synthesize implements Speaker.
func (r *SpeechRouter) Synthesize(ctx context.Context, text, voiceID, outWAV string) (time.Duration, error) {
	if s, ok := r.servers[voiceID]; ok {
		return s.Synthesize(ctx, text, voiceID, outWAV)
	}
	if r.Default == nil {
		return 0, fmt.Errorf("%w: %q (this node speaks only its speech servers' %d voices)", ErrUnknownVoice, voiceID, len(r.voices))
	}
	return r.Default.Synthesize(ctx, text, voiceID, outWAV)
}

// ServerVoices returns the speech servers' voices in configuration order;
// callers may modify the slice.
func (r *SpeechRouter) ServerVoices() []Voice { return append([]Voice(nil), r.voices...) }

// ListVoices returns every voice the router speaks: the servers' voices,
// then those of Default when it lists voices (Tools.ListVoices) less any
// id a server took.
func (r *SpeechRouter) ListVoices(ctx context.Context) ([]Voice, error) {
	out := r.ServerVoices()
	lister, ok := r.Default.(interface {
		ListVoices(context.Context) ([]Voice, error)
	})
	if !ok {
		return out, nil
	}
	more, err := lister.ListVoices(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range more {
		if _, taken := r.servers[v.ID]; !taken {
			out = append(out, v)
		}
	}
	return out, nil
}
