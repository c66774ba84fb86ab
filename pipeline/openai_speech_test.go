package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var kokoroVoices = []Voice{
	{ID: "af_bella", Name: "Bella", Language: "en-us", Gender: "female"},
	{ID: "bm_george", Name: "George", Language: "en-gb", Gender: "male"},
}

// speechFake answers every line with a WAV of 100 ms per word of input.
func speechFake(t *testing.T, stream bool) *fakeOpenAI {
	return newFakeOpenAI(t, &fakeOpenAI{model: "kokoro", voices: []string{"af_bella", "bm_george"},
		speech: func(_ int, req speechRequest) (fakeReply, []byte) {
			d := time.Duration(len(strings.Fields(req.Input))) * 100 * time.Millisecond
			return fakeReply{header: map[string]string{"Content-Type": "audio/wav"}}, testWAV(d, stream)
		}})
}

func newTestSpeech(f *fakeOpenAI) (*SpeechServer, *recordWaits) {
	rw := &recordWaits{}
	return &SpeechServer{URL: f.url(), Model: f.model, APIKey: f.apiKey, Voices: kokoroVoices, wait: rw.wait}, rw
}

func TestSpeechServerSynthesizes(t *testing.T) {
	for _, stream := range []bool{false, true} {
		f := speechFake(t, stream)
		s, _ := newTestSpeech(f)
		out := filepath.Join(t.TempDir(), "sub", "line.wav")
		d, err := s.Synthesize(testCtx(t), "  The keeper climbs\nthe stairs at dusk. ", "bm_george", out)
		if err != nil {
			t.Fatal(err)
		}
		if d != 700*time.Millisecond {
			t.Errorf("stream=%v: measured %v, want 700ms", stream, d)
		}
		if again, err := WAVDuration(out); err != nil || again != d {
			t.Errorf("stream=%v: the file measures %v (%v), want %v", stream, again, err, d)
		}
		want := speechRequest{Model: "kokoro", Input: "The keeper climbs the stairs at dusk.", Voice: "bm_george", ResponseFormat: "wav"}
		if reqs := f.speechRequests(); len(reqs) != 1 || reqs[0] != want {
			t.Errorf("requests %+v, want %+v", reqs, want)
		}
	}
}

func TestSpeechServerRejectsNonWAV(t *testing.T) {
	cases := []struct {
		name   string
		ctype  string
		body   []byte
		errHas string
	}{
		{"mp3", "audio/mpeg", []byte("ID3\x04\x00\x00\x00\x00\x00\x00"), `answered "audio/mpeg", not WAV audio`},
		{"json", "application/json", []byte(`{"audio": "..."}`), `answered "application/json", not WAV audio`},
		{"html as wav", "audio/wav", []byte("<html>502 Bad Gateway</html>"), "not a WAV file: no RIFF/WAVE header"},
		{"header only", "audio/wav", testWAV(0, false), "not a WAV file: no audio in the data chunk"},
		{"no data chunk", "application/octet-stream", testWAV(0, false)[:36], "not a WAV file: no data chunk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeOpenAI(t, &fakeOpenAI{model: "kokoro", voices: []string{"af_bella"},
				speech: func(int, speechRequest) (fakeReply, []byte) {
					return fakeReply{header: map[string]string{"Content-Type": c.ctype}}, c.body
				}})
			s, _ := newTestSpeech(f)
			out := filepath.Join(t.TempDir(), "line.wav")
			_, err := s.Synthesize(testCtx(t), "Hello there.", "af_bella", out)
			if !errors.Is(err, ErrRunnerFailed) || !strings.Contains(err.Error(), c.errHas) || !strings.Contains(err.Error(), f.url()) {
				t.Fatalf("error %v: want ErrRunnerFailed naming the server and %q", err, c.errHas)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a rejected answer was written to %s", out)
			}
		})
	}
}

func TestSpeechServerErrors(t *testing.T) {
	f := speechFake(t, false)
	s, _ := newTestSpeech(f)
	s.Voices = append(s.Voices, Voice{ID: "af_gone", Name: "Gone", Language: "en-us", Gender: "female"})
	out := filepath.Join(t.TempDir(), "line.wav")
	if _, err := s.Synthesize(testCtx(t), "Hi.", "en-us", out); !errors.Is(err, ErrUnknownVoice) {
		t.Errorf("a voice the server does not offer: %v, want ErrUnknownVoice", err)
	}
	if _, err := s.Synthesize(testCtx(t), " \n ", "af_bella", out); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty text: %v, want ErrInvalidRequest", err)
	}
	_, err := s.Synthesize(testCtx(t), "Hi.", "af_gone", out)
	if !errors.Is(err, ErrRunnerFailed) || !strings.Contains(err.Error(), "400 Bad Request: Voice 'af_gone' not found (type invalid_request_error, param voice)") {
		t.Errorf("a voice the server lost: %v", err)
	}
	if n := len(f.speechRequests()); n != 0 {
		t.Errorf("%d lines were answered, want none", n)
	}
}

func TestSpeechServerRetriesWhenBusy(t *testing.T) {
	ok := testWAV(time.Second, false)
	f := newFakeOpenAI(t, &fakeOpenAI{model: "kokoro", voices: []string{"af_bella"},
		speech: func(n int, _ speechRequest) (fakeReply, []byte) {
			if n < 2 {
				return fakeReply{status: 429, errMsg: "busy", header: map[string]string{"Retry-After": "3"}}, nil
			}
			return fakeReply{header: map[string]string{"Content-Type": "audio/wav; codecs=1"}}, ok
		}})
	s, rw := newTestSpeech(f)
	d, err := s.Synthesize(testCtx(t), "Hello.", "af_bella", filepath.Join(t.TempDir(), "a.wav"))
	if err != nil || d != time.Second {
		t.Fatalf("got %v, %v; want 1s", d, err)
	}
	if got := rw.got(); !reflect.DeepEqual(got, []time.Duration{3 * time.Second, 3 * time.Second}) {
		t.Errorf("waited %v, want 3s twice", got)
	}
}

func TestSpeechServerCheck(t *testing.T) {
	good := SpeechServer{URL: "http://127.0.0.1:8880/v1", Model: "kokoro", Voices: kokoroVoices}
	cases := []struct {
		name   string
		edit   func(s *SpeechServer)
		errHas string
	}{
		{"good", func(*SpeechServer) {}, ""},
		{"no url", func(s *SpeechServer) { s.URL = "" }, "want an http(s) URL"},
		{"no model", func(s *SpeechServer) { s.Model = "" }, "no model name"},
		{"no voices", func(s *SpeechServer) { s.Voices = nil }, "no voices"},
		{"bad id", func(s *SpeechServer) { s.Voices = []Voice{{ID: "Bella!", Name: "B", Language: "en", Gender: "female"}} }, `voice id "Bella!"`},
		{"twice", func(s *SpeechServer) { s.Voices = append(s.Voices, kokoroVoices[0]) }, `voice id "af_bella" appears twice`},
		{"gender", func(s *SpeechServer) { s.Voices = []Voice{{ID: "x", Name: "X", Language: "en", Gender: "f"}} }, `gender "f"`},
		{"no language", func(s *SpeechServer) { s.Voices = []Voice{{ID: "x", Name: "X", Gender: "male"}} }, `language "": want a code such as en-us`},
		{"language case", func(s *SpeechServer) { s.Voices = []Voice{{ID: "x", Name: "X", Language: "en-US", Gender: "male"}} }, `language "en-US"`},
		{"no name", func(s *SpeechServer) { s.Voices = []Voice{{ID: "x", Language: "en", Gender: "male"}} }, "needs a name of 1 to 128 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := good
			s.Voices = append([]Voice(nil), good.Voices...)
			c.edit(&s)
			err := s.Check()
			if c.errHas == "" && err != nil || c.errHas != "" && (!errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), c.errHas)) {
				t.Fatalf("Check: %v, want %q", err, c.errHas)
			}
		})
	}
}

// fakeSpeaker stands for espeak-ng's Tools in router tests.
type fakeSpeaker struct {
	voices []Voice
	spoken []string // voice ids
}

func (f *fakeSpeaker) Synthesize(_ context.Context, _, voiceID, outWAV string) (time.Duration, error) {
	f.spoken = append(f.spoken, voiceID)
	return 2 * time.Second, os.WriteFile(outWAV, testWAV(2*time.Second, false), 0o644)
}

func (f *fakeSpeaker) ListVoices(context.Context) ([]Voice, error) { return f.voices, nil }

func TestSpeechRouter(t *testing.T) {
	f := speechFake(t, false)
	s, _ := newTestSpeech(f)
	espeak := &fakeSpeaker{voices: []Voice{
		{ID: "en-us", Name: "English (America)", Language: "en-us", Gender: "male"},
		{ID: "af_bella", Name: "shadowed", Language: "af", Gender: "male"},
	}}
	r, err := NewSpeechRouter(espeak, s)
	if err != nil {
		t.Fatal(err)
	}
	voices, err := r.ListVoices(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]Voice(nil), kokoroVoices...), espeak.voices[0]); !reflect.DeepEqual(voices, want) {
		t.Errorf("voices %+v, want %+v", voices, want)
	}

	plan := Plan{Scenes: []Scene{{Index: 0, Lines: []string{"One two three.", "Four five."}}, {Index: 1, Lines: []string{"Six."}}}}
	lines, err := Narrate(testCtx(t), r, plan, "af_bella", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[0].Duration != 300*time.Millisecond || lines[2].Scene != 1 || lines[2].Duration != 100*time.Millisecond {
		t.Errorf("narrated %+v", lines)
	}
	if _, err := r.Synthesize(testCtx(t), "Hi.", "en-us", filepath.Join(t.TempDir(), "e.wav")); err != nil {
		t.Fatal(err)
	}
	if len(f.speechRequests()) != 3 || !reflect.DeepEqual(espeak.spoken, []string{"en-us"}) {
		t.Errorf("server spoke %d lines, espeak %v; want 3 and [en-us]", len(f.speechRequests()), espeak.spoken)
	}

	alone, err := NewSpeechRouter(nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alone.Synthesize(testCtx(t), "Hi.", "en-us", filepath.Join(t.TempDir(), "x.wav")); !errors.Is(err, ErrUnknownVoice) {
		t.Errorf("no espeak-ng: %v, want ErrUnknownVoice", err)
	}
	if v, err := alone.ListVoices(testCtx(t)); err != nil || !reflect.DeepEqual(v, kokoroVoices) {
		t.Errorf("no espeak-ng: voices %v, %v", v, err)
	}
	if _, err := NewSpeechRouter(espeak, s, &SpeechServer{URL: "http://127.0.0.1:1", Model: "m", Voices: kokoroVoices[:1]}); !errors.Is(err, ErrInvalidRequest) ||
		!strings.Contains(err.Error(), `voice id "af_bella" is offered by both`) {
		t.Errorf("a voice on two servers: %v", err)
	}
}

func TestSpeechServerHealth(t *testing.T) {
	f := speechFake(t, false)
	s, _ := newTestSpeech(f)
	if err := s.Health(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	f.srv.Close()
	if err := s.Health(testCtx(t)); err == nil || !strings.Contains(err.Error(), "health check") {
		t.Errorf("a server that is gone: %v", err)
	}
}

func TestSpeakWithSpeechServer(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe")
	f := speechFake(t, true)
	s, _ := newTestSpeech(f)
	out := filepath.Join(t.TempDir(), "sample.m4a")
	d, err := testTools().SpeakWith(testCtx(t), s, "One two three four five six seven eight.", "af_bella", out)
	if err != nil {
		t.Fatal(err)
	}
	info := probe(t, out)
	if info.AudioCodec != "aac" || d < 700*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("sample of %v, want about 800ms of AAC: %+v", d, info)
	}
}

func TestSpeechServerWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	f := newFakeOpenAI(t, &fakeOpenAI{model: "kokoro", voices: []string{"af_bella"},
		speech: func(int, speechRequest) (fakeReply, []byte) {
			cancel() // the task is cancelled while the server is busy
			return fakeReply{status: 429, errMsg: "busy", header: map[string]string{"Retry-After": "20"}}, nil
		}})
	s := &SpeechServer{URL: f.url(), Model: "kokoro", Voices: kokoroVoices} // real waits
	_, err := s.Synthesize(ctx, "Hello.", "af_bella", filepath.Join(t.TempDir(), "a.wav"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := len(f.speechRequests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
