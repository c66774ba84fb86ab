package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/internal/fakes"
)

// e2eScript is the script the fake language model writes: one scene of
// 5 s, as the rules ask of a 5 s video.
const (
	e2eNarration = "Fishing boats slip out of the quiet harbour at dawn."
	e2eScript    = `{"title": "Harbour at dawn", "scenes": [{"narration": "` + e2eNarration + `",
		"visual": "wide shot of fishing boats leaving a misty harbour at sunrise", "duration_seconds": 5}]}`
)

// avatarWorkflow is a ComfyUI lip-sync workflow in API format: the
// presenter's picture and the narration in, a video out.
const avatarWorkflow = `{
  "1": {"class_type": "LoadImage", "inputs": {"image": "{{portrait}}"}},
  "2": {"class_type": "LoadAudio", "inputs": {"audio": "{{audio}}"}},
  "3": {"class_type": "KSampler", "inputs": {"seed": 1, "steps": 4, "model": ["1", 0], "positive": ["2", 0]}},
  "4": {"class_type": "CreateVideo", "inputs": {"fps": 24, "images": ["3", 0], "audio": ["2", 0]}},
  "5": {"class_type": "SaveVideo", "inputs": {"filename_prefix": "avatar/vidfarm", "format": "mp4", "codec": "h264", "video": ["4", 0]}}
}`

// startKokoro is a fake OpenAI-compatible speech server with the voice
// af_bella, answering every line with 2 s of WAV.
func startKokoro(t *testing.T) *fakes.OpenAI {
	return fakes.NewOpenAI(t, &fakes.OpenAI{Model: "kokoro", Voices: []string{"af_bella"},
		Speech: func(int, fakes.SpeechRequest) (fakes.OpenAIReply, []byte) {
			return fakes.OpenAIReply{Header: map[string]string{"Content-Type": "audio/wav"}}, fakes.WAV(2*time.Second, true)
		}})
}

// kokoroRunner is the runners file line of startKokoro's server (%s: its URL).
const kokoroRunner = `  - {name: kokoro, kind: openai-speech, url: %s, model: kokoro, stages: [tts],
     voices: [{id: af_bella, name: Bella, language: en-us, gender: female}]}
`

// TestE2EOpenAIPlanVoiceAndAvatar: an agent whose runners file names an
// OpenAI-compatible chat server (plan), speech server (tts) and a ComfyUI
// lip-sync workflow (avatar). The speech server's voice is listed in GET
// /v1/voices with its language and gender and speaks a sample; an auto video
// with that voice is planned by the language model (its narration is in
// the captions), spoken by the speech server and presented by the ComfyUI
// clip, made from the presenter's picture and the narration.
func TestE2EOpenAIPlanVoiceAndAvatar(t *testing.T) {
	f := newE2EFarm(t, 100)
	llm := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "qwen2.5-7b-instruct", Chat: func(int, fakes.ChatRequest) fakes.OpenAIReply {
		return fakes.OpenAIReply{Content: e2eScript}
	}})
	tts := startKokoro(t)
	lipsync := startComfy(t, e2eClip(t, f.dir, 3))
	if err := os.WriteFile(filepath.Join(f.dir, "lipsync.json"), []byte(avatarWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	runners := filepath.Join(f.dir, "runners.yaml")
	if err := os.WriteFile(runners, fmt.Appendf(nil, `version: 1
runners:
  - {name: planner, kind: openai-chat, url: %s/v1, model: qwen2.5-7b-instruct, stages: [plan]}
  - name: kokoro
    kind: openai-speech
    url: %s
    model: kokoro
    stages: [tts]
    voices: [{id: af_bella, name: Bella, language: en-us, gender: female}]
  - {name: lipsync, kind: comfyui, url: %s, stages: [avatar], workflow: ./lipsync.json}
`, llm.URL(), tts.URL(), lipsync.URL()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.startAgent("agent-ai", "--runners", runners)

	voices := f.srv.must(http.StatusOK, http.MethodGet, "/v1/voices?language=en-us&gender=female&search=bella", f.apiKey, "").obj(t)
	data, _ := voices["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != "af_bella" {
		t.Fatalf("GET /v1/voices for Bella: %v", voices)
	}
	sp := f.srv.must(http.StatusOK, http.MethodPost, "/v1/voices/speech", f.apiKey, `{"text":"Hello from Kokoro.","voice_id":"af_bella"}`).obj(t)
	if num(sp, "duration_seconds") < 1.5 {
		t.Errorf("speech sample of %v s, want the server's 2 s", sp["duration_seconds"])
	}

	v := f.createVideo(`{"mode":"auto","prompt":"A harbour waking up: boats, gulls and the first light.","duration_seconds":5,"voice_id":"af_bella"}`)
	v = f.waitStatus(v["id"].(string), "completed", 120*time.Second)
	fw, fh := frameSize(t, "720p", "16:9")
	info := checkMP4(t, f.download(v["video_url"].(string), "auto.mp4"), 5, fw, fh, true)
	srt := f.download(v["caption_url_srt"].(string), "auto.srt")
	checkCaptions(t, srt, info.Duration)
	if b, _ := os.ReadFile(srt); !strings.Contains(strings.Join(strings.Fields(string(b)), " "), "Fishing boats slip out") {
		t.Errorf("the captions do not carry the language model's narration %q:\n%s", e2eNarration, b)
	}

	chats := llm.ChatRequests()
	if len(chats) != 1 || !strings.Contains(chats[0].Messages[len(chats[0].Messages)-1].Content, "A harbour waking up") {
		t.Errorf("the language model got %d requests: %+v", len(chats), chats)
	}
	var spoken []string
	for _, r := range tts.SpeechRequests() {
		if r.Voice != "af_bella" {
			t.Errorf("the speech server was asked for voice %q", r.Voice)
		}
		spoken = append(spoken, r.Input)
	}
	if got := strings.Join(spoken, " "); !strings.Contains(got, "Hello from Kokoro.") || !strings.Contains(got, "harbour at dawn") {
		t.Errorf("the speech server spoke %q; want the sample and the narration", spoken)
	}

	prompts := comfyPrompts(lipsync)
	if len(prompts) != 1 {
		t.Fatalf("the lip-sync server got %d prompts, want 1", len(prompts))
	}
	lipsync.Mu.Lock()
	defer lipsync.Mu.Unlock()
	portrait, _ := prompts[0].Nodes["1"].Inputs["image"].(string)
	audio, _ := prompts[0].Nodes["2"].Inputs["audio"].(string)
	if !bytes.HasPrefix(lipsync.Uploads[portrait], []byte("\x89PNG")) || !bytes.HasPrefix(lipsync.Uploads[audio], []byte("RIFF")) {
		t.Errorf("the lip-sync workflow got picture %q and audio %q, want an uploaded PNG and WAV", portrait, audio)
	}
}

// TestE2EVoiceRouting: two agents, one with a speech server's voice and one
// with espeak-ng only. Once the leader has switched voice routing on, every
// speech sample and auto video narration in the server's voice is leased to
// the agent with the server, whichever agent asks for work first: the other
// one would fail the task (it does not know the voice), and only a retry
// elsewhere would save it.
func TestE2EVoiceRouting(t *testing.T) {
	f := newE2EFarm(t, 100)
	f.waitRouting()
	tts := startKokoro(t)
	runners := f.runnersFile(kokoroRunner, tts.URL())
	espeak := f.startAgent("agent-espeak")
	f.startAgent("agent-kokoro", "--runners", runners)
	const samples = 6
	for i := range samples {
		sp := f.srv.must(http.StatusOK, http.MethodPost, "/v1/voices/speech", f.apiKey,
			fmt.Sprintf(`{"text":"Sample number %d.","voice_id":"af_bella"}`, i)).obj(t)
		if sp["status"] != "completed" || num(sp, "duration_seconds") < 1.5 {
			t.Fatalf("speech sample %d: %v, want it completed with the server's 2 s", i, sp)
		}
	}
	if n := len(tts.SpeechRequests()); n != samples {
		t.Fatalf("the speech server spoke %d samples, want %d", n, samples)
	}
	// An auto video's narration goes the same way; its other tasks go anywhere.
	v := f.createVideo(`{"mode":"auto","prompt":"A lighthouse keeper's morning, told in two short lines.","duration_seconds":5,"voice_id":"af_bella"}`)
	f.waitStatus(v["id"].(string), "completed", 120*time.Second)
	if n := len(tts.SpeechRequests()); n <= samples {
		t.Errorf("the speech server spoke %d lines in all, want the auto video's narration after the %d samples", n, samples)
	}
	for _, kind := range []string{"speech", "tts"} {
		if l := findLogs(espeak.proc, "task leased", "kind", kind); len(l) > 0 {
			t.Fatalf("the agent without the voice was leased %d %s tasks: %v", len(l), kind, l)
		}
	}
}

// waitRouting waits until the leader has switched routing on
// (StartRouting).
func (f *e2eFarm) waitRouting() {
	f.t.Helper()
	eventually(f.t, 30*time.Second, "the leader to switch routing on", func() bool {
		raw, err := f.srv.admin.Do(context.Background(), http.MethodGet, "/metrics", nil)
		return err == nil && strings.Contains(string(raw), `vidfarm_fsm_apply_seconds_count{type="start_routing"} 1`)
	})
}

// TestE2EPlannerRouting: two agents, one with an OpenAI-compatible planner
// and one without. Every auto video made once the planner's node is
// registered is planned by the language model, whichever agent asks for
// work first; the other agent renders scenes and composites but is never
// given a plan (it would write the template script).
func TestE2EPlannerRouting(t *testing.T) {
	f := newE2EFarm(t, 100)
	f.waitRouting()
	llm := fakes.NewOpenAI(t, &fakes.OpenAI{Model: "qwen2.5-7b-instruct", Chat: func(int, fakes.ChatRequest) fakes.OpenAIReply {
		return fakes.OpenAIReply{Content: e2eScript}
	}})
	runners := f.runnersFile("  - {name: planner, kind: openai-chat, url: %s/v1, model: qwen2.5-7b-instruct, stages: [plan]}\n", llm.URL())
	plain := f.startAgent("agent-plain")
	f.startAgent("agent-planner", "--runners", runners)
	const videos = 3
	var ids []string
	for i := range videos {
		v := f.createVideo(fmt.Sprintf(`{"mode":"auto","prompt":"Harbour morning number %d: boats, gulls, first light.","duration_seconds":5}`, i))
		ids = append(ids, v["id"].(string))
	}
	for _, id := range ids {
		f.waitStatus(id, "completed", 120*time.Second)
	}
	if n := len(llm.ChatRequests()); n != videos {
		t.Errorf("the language model planned %d videos, want %d", n, videos)
	}
	if l := findLogs(plain.proc, "task leased", "kind", "plan"); len(l) > 0 {
		t.Fatalf("the agent without a planner was leased %d plans: %v", len(l), l)
	}
}

// TestE2EServerVoiceWithoutEspeak: a node whose only voices are a speech
// server's (espeak-ng is not on its PATH) narrates an auto video in one of
// them: once routing is on, the tts task requires the voice, not espeak-ng.
func TestE2EServerVoiceWithoutEspeak(t *testing.T) {
	f := newE2EFarm(t, 100)
	f.waitRouting()
	tts := startKokoro(t)
	runners := f.runnersFile(kokoroRunner, tts.URL())
	// A PATH with ffmpeg and ffprobe only.
	bin := filepath.Join(f.dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	ag := f.startAgentEnv("agent-no-espeak", []string{"PATH=" + bin}, "--runners", runners)
	if reg := findLogs(ag.proc, "registered"); len(reg) != 1 || fmt.Sprint(reg[0]["tools"]) != "[ffmpeg ffprobe]" {
		t.Fatalf("the agent registered with %v, want ffmpeg and ffprobe only", reg)
	}
	v := f.createVideo(`{"mode":"auto","prompt":"Rain on a tin roof, told in two short lines.","duration_seconds":5,"voice_id":"af_bella"}`)
	v = f.waitStatus(v["id"].(string), "completed", 120*time.Second)
	fw, fh := frameSize(t, "720p", "16:9")
	checkMP4(t, f.download(v["video_url"].(string), "no-espeak.mp4"), 5, fw, fh, true)
	if len(tts.SpeechRequests()) == 0 {
		t.Fatal("the speech server spoke nothing")
	}
}
