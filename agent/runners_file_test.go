package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// exampleDir is a copy of deploy/runners.example.yaml with the files it
// names (a workflow and a runner script).
func exampleDir(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../deploy/runners.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wf, err := os.ReadFile("../deploy/runners/comfyui-wan-t2v.json")
	if err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{"runners.yaml": 0o644, "runners/comfyui-wan-t2v.json": 0o644, "runners/hunyuan.sh": 0o755} {
		body := []byte("{}")
		switch path {
		case "runners.yaml":
			body = data
		case "runners/comfyui-wan-t2v.json":
			body = wf
		}
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, body, mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExampleRunnersFile(t *testing.T) {
	t.Setenv("LLM_API_KEY", "sk-test")
	dir := exampleDir(t)
	specs, err := LoadRunnersFile(filepath.Join(dir, "runners.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if kinds, want := specKinds(specs), []string{RunnerCog, RunnerComfyUI, RunnerOpenAIChat, RunnerOpenAISpeech, RunnerCommand, RunnerHTTP}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds = %v, want every kind once: %v", kinds, want)
	}
	cog := specs[0]
	if cog.Name != "wan-i2v" || cog.URL != "http://127.0.0.1:5000" || !slices.Equal(cog.Models, []string{"wan-2.2-a14b"}) ||
		cog.GPUMemoryGB != 40 || cog.Concurrency != 1 || cog.Timeout != 30*time.Minute || cog.HealthInterval != 10*time.Second || cog.UnhealthyAfter != 2 ||
		cog.Inputs["num_frames"] != "num_frames" || len(cog.Inputs) != 7 || cog.Where != "runners.yaml:38" {
		t.Errorf("cog runner = %+v", cog)
	}
	if want := filepath.Join(dir, "runners", "comfyui-wan-t2v.json"); specs[1].Workflow != want || specs[1].OutputNode != "58" {
		t.Errorf("comfyui workflow = %q, output node %q; want %q, 58", specs[1].Workflow, specs[1].OutputNode, want)
	}
	if specs[2].Model != "qwen2.5-7b-instruct" || specs[2].APIKeyEnv != "LLM_API_KEY" || !slices.Equal(specs[2].Stages, []string{StagePlan}) {
		t.Errorf("openai-chat runner = %+v", specs[2])
	}
	if len(specs[3].Voices) != 2 || specs[3].Voices[1].Gender != "male" {
		t.Errorf("openai-speech voices = %+v", specs[3].Voices)
	}
	if want := filepath.Join(dir, "runners", "hunyuan.sh"); specs[4].Command[0] != want || specs[4].Concurrency != 2 {
		t.Errorf("command = %v (concurrency %d), want %s first", specs[4].Command, specs[4].Concurrency, want)
	}
}

func TestRunnersFileMistakes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		yaml string
		want []string // every problem, in the order of their lines
	}{
		{"not yaml", "version: 1\nrunners: [\n", []string{"runners.yaml: yaml: line 2: did not find expected node content"}},
		{"empty", "", []string{"runners.yaml:0: (top): want a mapping"}},
		{"version and runners", "version: 2\nextra: x\n", []string{
			`runners.yaml:1: version: "2": only version 1 exists`,
			"runners.yaml:1: runners: missing",
			"runners.yaml:2: extra: unknown field",
		}},
		{"all at once", `version: 1
runners:
  - name: a
    kind: cog
    url: http://127.0.0.1:5000
    models: [wan-2.2-a14b, no-such-model]
    gpu_memory_gb: 0
    concurrency: -1
    timeout: soon
    health_interval: 1ms
    colour: blue
    workflow: x.json
    inputs: {prompt: prompt, strength: strength, audio: audio_in}
  - name: a
    kind: cog
    url: ftp://host
    models: [wan-2.2-a14b]
    stages: [plan]
    inputs: {prompt: ""}
`, []string{
			`runners.yaml:6: runners[0].models[1]: "no-such-model" is not a catalog model`,
			"runners.yaml:7: runners[0].gpu_memory_gb: must be > 0",
			`runners.yaml:8: runners[0].concurrency: "-1": want a whole number >= 1`,
			`runners.yaml:9: runners[0].timeout: "soon" is not a duration`,
			"runners.yaml:10: runners[0].health_interval: 1ms: want at least 100ms",
			"runners.yaml:11: runners[0].colour: unknown field",
			"runners.yaml:12: runners[0].workflow: not a field of kind cog",
			"runners.yaml:13: runners[0].inputs.strength: not a request field",
			"runners.yaml:13: runners[0].inputs.audio: an avatar input",
			`runners.yaml:14: runners[1].name: "a" is also the name of the runner at runners.yaml:3`,
			`runners.yaml:14: runners[1].models: model "wan-2.2-a14b" is also given to the runner at runners.yaml:3`,
			`runners.yaml:16: runners[1].url: "ftp://host" is not an http(s) URL`,
			`runners.yaml:18: runners[1].stages[0]: kind cog cannot serve stage "plan"`,
			"runners.yaml:19: runners[1].inputs.prompt: want a non-empty string",
		}},
		{"health_url", `version: 1
runners:
  - {name: h, kind: http, url: http://h/render, models: [mochi-1], health_url: "ftp://h"}
  - {name: c, kind: cog, url: http://h, models: [veo-3], inputs: {prompt: prompt}, health_url: http://h/healthz}
`, []string{
			`runners.yaml:3: runners[0].health_url: "ftp://h" is not an http(s) URL with a host`,
			"runners.yaml:4: runners[1].health_url: not a field of kind cog",
		}},
		{"unhealthy_after", "version: 1\nrunners:\n  - {name: a, kind: cog, url: http://h, models: [mochi-1], inputs: {prompt: prompt}, unhealthy_after: 0}\n",
			[]string{`runners.yaml:3: runners[0].unhealthy_after: "0": want a whole number of failed checks in a row, 1 to 100`}},
		{"kinds and their fields", `version: 1
runners:
  - {name: x, kind: docker, url: http://h}
  - {name: c, kind: command, url: http://h, models: [mochi-1]}
  - {name: s, kind: openai-speech, url: http://h, stages: [tts], api_key_env: "1BAD", voices: [{id: v, name: V, language: en, gender: robot, age: 3}]}
  - {name: p, kind: openai-chat, url: http://h, stages: [plan], models: [mochi-1]}
  - {name: q, kind: openai-chat, url: http://h, stages: [plan], model: m}
  - {name: w, kind: comfyui, url: http://h, models: [veo-3], workflow: missing.json}
  - {name: e, kind: cog, url: http://h}
`, []string{
			`runners.yaml:3: runners[0].kind: "docker" is not a kind`,
			"runners.yaml:4: runners[1].url: not a field of kind command",
			"runners.yaml:4: runners[1].command: missing",
			`runners.yaml:5: runners[2].model: missing`,
			`runners.yaml:5: runners[2].api_key_env: "1BAD" is not an environment variable name`,
			"runners.yaml:5: runners[2].voices[0].age: unknown field",
			`runners.yaml:5: runners[2].voices[0]: voice v: gender "robot"`,
			"runners.yaml:6: runners[3].models: kind openai-chat renders no catalog models",
			"runners.yaml:6: runners[3].model: missing",
			`runners.yaml:6: runners[3].models: model "mochi-1" is also given to the runner at runners.yaml:4`,
			`runners.yaml:7: runners[4].stages: stage "plan" is also given to the runner at runners.yaml:6`,
			"runners.yaml:8: runners[5].workflow: " + filepath.Join(dir, "missing.json") + ": not a readable file",
			`runners.yaml:9: runners[6]: runner "e" serves nothing`,
			"runners.yaml:9: runners[6].inputs: missing",
		}},
		{"workflows and avatar inputs", `version: 1
runners:
  - {name: ui, kind: comfyui, url: http://h, models: [veo-3], workflow: ui.json}
  - {name: node, kind: comfyui, url: http://h, models: [veo-2], workflow: t2v.json, output_node: "99"}
  - {name: face, kind: comfyui, url: http://h, stages: [avatar], workflow: t2v.json}
  - {name: lips, kind: cog, url: http://h, models: [mochi-1], stages: [avatar], inputs: {prompt: prompt, audio: audio}}
`, []string{
			`runners.yaml:3: runners[0].workflow: pipeline: invalid ComfyUI workflow`,
			`runners.yaml:4: runners[1].output_node: "99" is not a node of t2v.json`,
			`runners.yaml:5: runners[2].workflow: an avatar workflow needs the placeholder "{{audio}}"`,
			`runners.yaml:5: runners[2].workflow: an avatar workflow needs the placeholder "{{portrait}}"`,
			`runners.yaml:6: runners[3].inputs: an avatar runner needs portrait`,
			`runners.yaml:6: runners[3].stages: stage "avatar" is also given to the runner at runners.yaml:5`,
		}},
	}
	wf, err := os.ReadFile("../deploy/runners/comfyui-wan-t2v.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"t2v.json": wf, "ui.json": []byte(`{"nodes": [], "links": []}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRunnersFile("runners.yaml", dir, []byte(tc.yaml))
			var rfe *RunnersFileError
			if !errors.As(err, &rfe) || !errors.Is(err, ErrConfig) {
				t.Fatalf("ParseRunnersFile = %v, want a *RunnersFileError wrapping ErrConfig", err)
			}
			if len(rfe.Problems) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%s", len(rfe.Problems), len(tc.want), strings.Join(rfe.Problems, "\n"))
			}
			for i, want := range tc.want {
				if i >= len(rfe.Problems) || !strings.HasPrefix(rfe.Problems[i], want) {
					t.Errorf("problem %d: want prefix %q; all:\n%s", i, want, strings.Join(rfe.Problems, "\n"))
					break
				}
			}
		})
	}
}
