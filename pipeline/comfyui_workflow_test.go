package pipeline

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseComfyWorkflow(t *testing.T) {
	for _, tc := range []struct {
		name, js string
		msg      string // "": valid
	}{
		{"valid", comfyT2V(comfyLoadImage + ",\n" + comfyVHS), ""},
		{"unknown placeholder", `{"6": {"class_type": "CLIPTextEncode", "inputs": {"text": "{{promt}}"}}}`,
			`node "6" (CLIPTextEncode) input "text": unknown placeholder {{promt}}; known: prompt, negative_prompt`},
		{"placeholder inside text", `{"6": {"class_type": "CLIPTextEncode", "inputs": {"text": "cinematic, {{prompt}}"}}}`,
			`node "6" (CLIPTextEncode) input "text": "cinematic, {{prompt}}": a placeholder must be the whole value`},
		{"UI format", `{"last_node_id": 9, "nodes": [], "links": []}`, `ComfyUI's UI format`},
		{"not JSON", `{"6": `, "not a JSON object"},
		{"no class_type", `{"6": {"inputs": {}}}`, `node "6" has no class_type`},
		{"node not an object", `{"6": [1, 2]}`, `node "6" is not an object`},
		{"empty", `{}`, "no nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf, err := ParseComfyWorkflow("wan.json", []byte(tc.js))
			if tc.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), "wan.json: ") || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("workflow %v, err = %v; want ErrInvalidWorkflow naming wan.json and %q", wf, err, tc.msg)
			}
		})
	}
}

func TestComfyWorkflowPlaceholders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i2v.json")
	if err := os.WriteFile(path, []byte(comfyT2V(comfyLoadImage+",\n"+comfyVHS)), 0o644); err != nil {
		t.Fatal(err)
	}
	wf, err := LoadComfyWorkflow(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fps", "height", "image", "negative_prompt", "num_frames", "prompt", "seed", "width"}
	if got := wf.Fields(); !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	var loadImage []ComfyPlaceholder
	for _, p := range wf.Placeholders() {
		if p.Field == "image" {
			loadImage = append(loadImage, p)
		}
	}
	if want := []ComfyPlaceholder{{Node: "10", Class: "LoadImage", Input: "image", Field: "image"}}; !reflect.DeepEqual(loadImage, want) {
		t.Errorf("image placeholders %+v, want %+v", loadImage, want)
	}
	if _, err := LoadComfyWorkflow(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, ErrInvalidWorkflow) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	// Numbers keep their type and 64-bit seeds their digits.
	filled, err := wf.fill(map[string]any{"prompt": "p", "negative_prompt": "", "seed": int64(1<<62 + 1), "width": 832,
		"height": 480, "num_frames": 81, "fps": 16, "image": "vidfarm-x-image.png"})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(filled)
	for _, s := range []string{`"seed":4611686018427387905`, `"width":832`, `"image":"vidfarm-x-image.png"`, `"steps":4`, `"model":["1",0]`} {
		if !strings.Contains(string(js), s) {
			t.Errorf("filled workflow lacks %s: %s", s, js)
		}
	}
}

func TestComfyRequestInputs(t *testing.T) {
	req := RenderRequest{Prompt: "p", Seed: 7, FPS: 16, DurationSeconds: 5.03, InputImages: []string{"/a.png", "/b.png", "/c.png"}}
	in := comfyRequestInputs(req, 832, 480)
	for k, want := range map[string]any{"num_frames": 80, "width": 832, "height": 480, "image": "/a.png", "last_image": "/c.png", "seed": int64(7)} {
		if in[k] != want {
			t.Errorf("%s = %#v, want %#v", k, in[k], want)
		}
	}
	if _, ok := comfyRequestInputs(RenderRequest{FPS: 24, DurationSeconds: 0.01}, 1, 1)["image"]; ok {
		t.Error("text_to_video has an image")
	}
}

func TestComfyPickOutput(t *testing.T) {
	vhs := `"7": {"gifs": [{"filename": "vidfarm_00001.mp4", "subfolder": "", "type": "output", "format": "video/h264-mp4", "frame_rate": 16}]}`
	save := `"9": {"images": [{"filename": "vidfarm_00001_.mp4", "subfolder": "video", "type": "output"}], "animated": [true]}`
	png := `"11": {"images": [{"filename": "ComfyUI_00001_.png", "subfolder": "", "type": "output"}]}`
	for _, tc := range []struct {
		name, outputs, node string
		want                string // filename; "" for an error
		err                 error
		msg                 string
	}{
		{"VHS_VideoCombine gifs", vhs, "", "vidfarm_00001.mp4", nil, ""},
		{"SaveVideo images, animated", save, "", "vidfarm_00001_.mp4", nil, ""},
		{"videos key", `"3": {"videos": [{"filename": "a.webm", "subfolder": "", "type": "temp"}]}`, "", "a.webm", nil, ""},
		{"the only video beside an image", png + "," + vhs, "", "vidfarm_00001.mp4", nil, ""},
		{"last of a node's videos", `"7": {"gifs": [{"filename": "a.mp4"}, {"filename": "a-audio.mp4"}]}`, "", "a-audio.mp4", nil, ""},
		{"output node chosen", vhs + "," + save, "9", "vidfarm_00001_.mp4", nil, ""},
		{"two videos", vhs + "," + save, "", "", ErrRunnerFailed, `nodes ["7" "9"] all gave videos; set output_node`},
		{"only an image", png, "", "", ErrNoOutput, `gave no video file (it gave [node "11" images ComfyUI_00001_.png])`},
		{"output node without video", png + "," + vhs, "11", "", ErrNoOutput, `output node "11" gave no video file`},
		{"nothing", ``, "", "", ErrNoOutput, "it gave no files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h comfyHistory
			if err := json.Unmarshal([]byte(`{"outputs": {`+tc.outputs+`}}`), &h); err != nil {
				t.Fatal(err)
			}
			f, err := pickOutput(h, tc.node)
			if tc.err == nil {
				if err != nil || f.Filename != tc.want {
					t.Fatalf("picked %+v, %v; want %s", f, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v with %q", err, tc.err, tc.msg)
			}
		})
	}
}

func TestComfyUISystemStats(t *testing.T) {
	f := newFakeComfy(t)
	r := f.runner(comfyWorkflow(t, comfyT2V(comfyVHS)))
	if err := r.Health(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	total, free, err := r.VRAM(testCtx(t))
	if err != nil || total != 85045379072 || free != 84000000000 {
		t.Fatalf("VRAM %d total, %d free, %v", total, free, err)
	}
	st, err := r.SystemStats(testCtx(t))
	if err != nil || st.System.ComfyUIVersion != "0.3.60" || len(st.Devices) != 1 || *st.Devices[0].Index != 0 {
		t.Fatalf("stats %+v, %v", st, err)
	}

	cpu := newFakeComfy(t, func(f *fakeComfy) {
		f.stats = `{"system": {"os": "posix"}, "devices": [{"name": "cpu", "type": "cpu", "index": null, "vram_total": 67108864000, "vram_free": 6e10}]}`
	})
	if total, free, err := cpu.runner(r.Workflow).VRAM(testCtx(t)); err != nil || total != 0 || free != 0 {
		t.Errorf("a CPU server: VRAM %d, %d, %v; want 0, 0", total, free, err)
	}

	bad := newFakeComfy(t, func(f *fakeComfy) { f.stats = `<html>` })
	if err := bad.runner(r.Workflow).Health(testCtx(t)); !errors.Is(err, ErrRunnerFailed) || !strings.Contains(err.Error(), "not the JSON ComfyUI sends") {
		t.Errorf("an answer that is not JSON: err = %v", err)
	}
	down := f.runner(r.Workflow)
	f.srv.Close()
	if err := down.Health(testCtx(t)); err == nil || !strings.Contains(err.Error(), "system_stats") {
		t.Errorf("a server that is down: err = %v", err)
	}
}

func TestComfyProgress(t *testing.T) {
	// Weights: six nodes of 1 and the KSampler's 4 steps: 10 in all.
	var got []int
	p := newComfyProgress(comfyWorkflow(t, comfyT2V(comfyVHS)), func(v int) {
		if len(got) == 0 || got[len(got)-1] != v {
			got = append(got, v)
		}
	})
	ev := func(js string) comfyEvent {
		var e comfyEvent
		if err := json.Unmarshal([]byte(js), &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, js := range []string{
		`{"type": "execution_start", "data": {"prompt_id": "p"}}`,
		`{"type": "execution_cached", "data": {"nodes": ["1"], "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "2", "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "3", "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "4", "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "5", "prompt_id": "p"}}`,
		`{"type": "progress", "data": {"value": 1, "max": 4, "node": "5", "prompt_id": "p"}}`,
		`{"type": "progress", "data": {"value": 2, "max": 4, "node": "5", "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "5.0.0.1", "display_node": "5", "prompt_id": "p"}}`,
		`{"type": "progress", "data": {"value": 3, "max": 4, "node": "5.0.0.1", "prompt_id": "p"}}`,
		`{"type": "progress", "data": {"value": 4, "max": 4, "node": "5", "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "6", "prompt_id": "p"}}`,
		`{"type": "executing", "data": {"node": "7", "prompt_id": "p"}}`,
		`{"type": "executed", "data": {"node": "7", "output": {}, "prompt_id": "p"}}`,
	} {
		if done, err := p.handle(ev(js)); done || err != nil {
			t.Fatalf("%s: done %v, %v", js, done, err)
		}
	}
	if want := []int{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress %v, want %v", got, want)
	}
	for _, tc := range []struct{ js, msg string }{
		{`{"type": "execution_success", "data": {"prompt_id": "p"}}`, ""},
		{`{"type": "executing", "data": {"node": null, "prompt_id": "p"}}`, ""},
		{`{"type": "execution_interrupted", "data": {"node_id": "5", "node_type": "KSampler", "prompt_id": "p"}}`,
			`interrupted on the server at node "5" (KSampler)`},
	} {
		done, err := p.handle(ev(tc.js))
		if !done || (tc.msg == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: done %v, err %v; want done, %q", tc.js, done, err, tc.msg)
		}
	}
}
