package pipeline

import (
	"bytes"
	"errors"
	"image/color"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// comfyT2V is a Wan text-to-video workflow in API format; extra holds
// more nodes, e.g. the output.
func comfyT2V(extra string) string {
	return `{
 "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_t2v_5B_fp16.safetensors", "weight_dtype": "default"}},
 "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "{{prompt}}", "clip": ["1", 0]}},
 "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "{{negative_prompt}}", "clip": ["1", 0]}},
 "4": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": "{{width}}", "height": "{{height}}", "length": "{{num_frames}}", "batch_size": 1}},
 "5": {"class_type": "KSampler", "inputs": {"seed": "{{seed}}", "steps": 4, "cfg": 5, "sampler_name": "uni_pc", "scheduler": "simple",
       "denoise": 1, "model": ["1", 0], "positive": ["2", 0], "negative": ["3", 0], "latent_image": ["4", 0]}},
 "6": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["1", 0]}},
 ` + extra + `}`
}

const (
	comfyVHS       = `"7": {"class_type": "VHS_VideoCombine", "inputs": {"images": ["6", 0], "frame_rate": "{{fps}}", "filename_prefix": "vidfarm", "format": "video/h264-mp4", "save_output": true}}`
	comfySaveVideo = `"8": {"class_type": "CreateVideo", "inputs": {"images": ["6", 0], "fps": "{{fps}}"}},
 "9": {"class_type": "SaveVideo", "inputs": {"video": ["8", 0], "filename_prefix": "video/vidfarm", "format": "mp4", "codec": "h264"}}`
	comfyLoadImage = `"10": {"class_type": "LoadImage", "inputs": {"image": "{{image}}"}},
 "11": {"class_type": "WanImageToVideo", "inputs": {"start_image": ["10", 0], "width": "{{width}}", "height": "{{height}}", "length": "{{num_frames}}"}}`
	comfyLoadLast = `"12": {"class_type": "LoadImage", "inputs": {"image": "{{last_image}}"}}`
)

func comfyWorkflow(t *testing.T, js string) *ComfyWorkflow {
	t.Helper()
	wf, err := ParseComfyWorkflow("test.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// comfyRequest is a text-to-video request writing into a temp dir.
func comfyRequest(t *testing.T) RenderRequest {
	return RenderRequest{Model: "wan-2.2", Prompt: "a red fox in snow", NegativePrompt: "blurry", Seed: 4242,
		Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 2, FPS: 16,
		OutputPath: filepath.Join(t.TempDir(), "out", "clip.mp4")}
}

func TestComfyUIRender(t *testing.T) {
	f := newFakeComfy(t)
	req := comfyRequest(t)
	var log progressLog
	if err := f.runner(comfyWorkflow(t, comfyT2V(comfyVHS))).Render(testCtx(t), req, log.fn); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(req.OutputPath)
	if err != nil || !bytes.Equal(got, f.clip) {
		t.Fatalf("clip: %d bytes, %v; want the %d bytes the server rendered", len(got), err, len(f.clip))
	}
	vals := log.values()
	checkProgress(t, vals)
	sampling := 0
	for _, v := range vals {
		if v > 3 && v < 95 {
			sampling++
		}
	}
	if sampling < 4 { // one per sampler step at least
		t.Errorf("progress %v: want the sampler's steps between 3 and 95", vals)
	}
	w, h, _ := FrameSize(req.Resolution, req.AspectRatio)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.all) != 1 {
		t.Fatalf("%d prompts queued, want 1", len(f.all))
	}
	p := f.all[0]
	for _, c := range []struct {
		node, input string
		want        any
	}{
		{"2", "text", req.Prompt}, {"3", "text", req.NegativePrompt}, {"5", "seed", 4242.0},
		{"4", "width", float64(w)}, {"4", "height", float64(h)}, {"4", "length", 32.0}, {"7", "frame_rate", 16.0},
		{"5", "steps", 4.0}, {"1", "unet_name", "wan2.2_t2v_5B_fp16.safetensors"},
	} {
		if got := p.nodes[c.node].Inputs[c.input]; got != c.want {
			t.Errorf("node %s input %s = %#v, want %#v", c.node, c.input, got, c.want)
		}
	}
	if p.clientID == "" {
		t.Error("the prompt has no client_id")
	}
}

func TestComfyUIUploadsImages(t *testing.T) {
	for _, tc := range []struct {
		name, op string
		n        int
		nodes    string
		want     map[string]int // LoadImage node → input image index
	}{
		{"image_to_video", ImageToVideo, 1, comfyLoadImage, map[string]int{"10": 0}},
		{"first_last_frame", FirstLastFrame, 2, comfyLoadImage + ",\n" + comfyLoadLast, map[string]int{"10": 0, "12": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeComfy(t)
			req := comfyRequest(t)
			req.Operation, req.InputImages = tc.op, testImages(t, t.TempDir(), tc.n)
			if err := f.runner(comfyWorkflow(t, comfyT2V(tc.nodes+",\n"+comfyVHS))).Render(testCtx(t), req, nil); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.uploads) != tc.n {
				t.Fatalf("%d uploads, want %d", len(f.uploads), tc.n)
			}
			for node, i := range tc.want {
				name, _ := f.all[0].nodes[node].Inputs["image"].(string)
				want, _ := os.ReadFile(req.InputImages[i])
				if !bytes.Equal(f.uploads[name], want) || !strings.HasPrefix(name, "vidfarm-") || !strings.HasSuffix(name, ".png") {
					t.Errorf("node %s image %q: not the upload of input image %d", node, name, i)
				}
			}
			for _, o := range f.overwrite {
				if o != "true" {
					t.Errorf("upload with overwrite %q", o)
				}
			}
		})
	}
}

func TestComfyUIPromptRefused(t *testing.T) {
	for _, tc := range []struct{ name, workflow, msg string }{
		{"model not installed", strings.Replace(comfyT2V(comfyVHS), "wan2.2_t2v_5B_fp16", "missing", 1),
			`node "1" (UNETLoader) input "unet_name": Value not in list: unet_name: 'missing.safetensors'`},
		{"node not installed", strings.Replace(comfyT2V(comfyVHS), "VHS_VideoCombine", "NotInstalled", 1),
			`Cannot execute because node NotInstalled does not exist.: Node ID '#7'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeComfy(t)
			req := comfyRequest(t)
			err := f.runner(comfyWorkflow(t, tc.workflow)).Render(testCtx(t), req, nil)
			checkComfyFailed(t, err, tc.msg, req.OutputPath)
		})
	}
}

func TestComfyUIMissingField(t *testing.T) {
	f := newFakeComfy(t)
	err := f.runner(comfyWorkflow(t, comfyT2V(comfyLoadImage+",\n"+comfyVHS))).Render(testCtx(t), comfyRequest(t), nil)
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), `needs image (node "10" (LoadImage) input "image")`) {
		t.Fatalf("err = %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.all) != 0 {
		t.Errorf("%d prompts queued for a request the workflow cannot take", len(f.all))
	}
}

func TestComfyUIExecutionError(t *testing.T) {
	f := newFakeComfy(t, func(f *fakeComfy) { f.errorAt = "5" })
	req := comfyRequest(t)
	err := f.runner(comfyWorkflow(t, comfyT2V(comfyVHS))).Render(testCtx(t), req, nil)
	want := `node "5" (KSampler) failed: torch.OutOfMemoryError: CUDA out of memory`
	checkComfyFailed(t, err, want, req.OutputPath)
}

func TestComfyUIOutputNode(t *testing.T) {
	wf := comfyT2V(comfyVHS + ",\n" + comfySaveVideo)
	f := newFakeComfy(t)
	err := f.runner(comfyWorkflow(t, wf)).Render(testCtx(t), comfyRequest(t), nil)
	if !errors.Is(err, ErrRunnerFailed) || !strings.Contains(err.Error(), `nodes ["7" "9"] all gave videos; set output_node`) {
		t.Fatalf("two video outputs, no output_node: err = %v", err)
	}
	r := f.runner(comfyWorkflow(t, wf))
	r.OutputNode = "9"
	if err := r.Render(testCtx(t), comfyRequest(t), nil); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if last := f.views[len(f.views)-1]; !strings.HasPrefix(last, "output/video/vidfarm_") {
		t.Errorf("downloaded %q, want SaveVideo's file in output/video", last)
	}
	r.OutputNode = "99"
	if err := r.Validate(); !errors.Is(err, ErrInvalidWorkflow) || !strings.Contains(err.Error(), `output_node "99"`) {
		t.Errorf("output_node not in the workflow: err = %v", err)
	}
}

func TestComfyUIBadOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		view func(f *fakeComfy)
		msg  string
	}{
		{"garbage", func(f *fakeComfy) {
			f.view = func(w http.ResponseWriter) { w.Write([]byte("<html>502 Bad Gateway</html>")) }
		}, "is not a video ffprobe can read"},
		{"missing", func(f *fakeComfy) {
			f.view = func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) }
		}, "GET /view answered 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeComfy(t, tc.view)
			req := comfyRequest(t)
			err := f.runner(comfyWorkflow(t, comfyT2V(comfyVHS))).Render(testCtx(t), req, nil)
			checkComfyFailed(t, err, tc.msg, req.OutputPath)
		})
	}
}

func TestComfyUIConcurrentRenders(t *testing.T) {
	f := newFakeComfy(t)
	r := f.runner(comfyWorkflow(t, comfyT2V(comfyVHS)))
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = r.Render(testCtx(t), comfyRequest(t), nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("render %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.all {
		if seen[p.clientID] {
			t.Errorf("client id %s used by two renders", p.clientID)
		}
		seen[p.clientID] = true
	}
}

// The example workflows in deploy/runners load and render.
func TestComfyUIDeployWorkflows(t *testing.T) {
	for _, tc := range []struct {
		file, op string
		images   int
	}{
		{"comfyui-wan-t2v.json", TextToVideo, 0},
		{"comfyui-wan-i2v.json", ImageToVideo, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			wf, err := LoadComfyWorkflow(filepath.Join("..", "deploy", "runners", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			f := newFakeComfy(t)
			req := comfyRequest(t)
			req.Operation = tc.op
			if tc.images > 0 {
				req.InputImages = testImages(t, t.TempDir(), tc.images)
			}
			if err := f.runner(wf).Render(testCtx(t), req, nil); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.uploads) != tc.images {
				t.Errorf("%d uploads, want %d", len(f.uploads), tc.images)
			}
		})
	}
}

// checkComfyFailed fails the test unless err is ErrRunnerFailed with msg
// and no clip was left at out.
func checkComfyFailed(t *testing.T, err error, msg, out string) {
	t.Helper()
	if !errors.Is(err, ErrRunnerFailed) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("err = %v, want ErrRunnerFailed with %q", err, msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a file was left at the output path after the failure")
	}
}

// The avatar stage runs a workflow with the narration and the picture.
func TestComfyUIRunAvatar(t *testing.T) {
	wf := comfyWorkflow(t, `{
 "1": {"class_type": "LoadImage", "inputs": {"image": "{{portrait}}"}},
 "2": {"class_type": "LoadAudio", "inputs": {"audio": "{{audio}}"}},
 "3": {"class_type": "VHS_VideoCombine", "inputs": {"images": ["1", 0], "audio": ["2", 0], "frame_rate": 25, "filename_prefix": "avatar"}}}`)
	dir := t.TempDir()
	portrait := writePNG(t, filepath.Join(dir, "face.png"), 64, 64, color.RGBA{200, 150, 120, 255}, color.RGBA{40, 40, 40, 255})
	audio := filepath.Join(dir, "narration.wav")
	if err := os.WriteFile(audio, []byte("RIFF....WAVEfmt "), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFakeComfy(t)
	out := filepath.Join(dir, "avatar.mp4")
	if err := f.runner(wf).Run(testCtx(t), ComfyInputs{"portrait": portrait, "audio": audio}, out, nil); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for node, src := range map[string]string{"1": portrait, "2": audio} {
		in := f.all[0].nodes[node].Inputs
		name, _ := in["image"].(string)
		if name == "" {
			name, _ = in["audio"].(string)
		}
		want, _ := os.ReadFile(src)
		if !bytes.Equal(f.uploads[name], want) || filepath.Ext(name) != filepath.Ext(src) {
			t.Errorf("node %s got %q, not the upload of %s", node, name, filepath.Base(src))
		}
	}
}
