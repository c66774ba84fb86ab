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

// These tests pin the exact arguments each stage hands its tools; the
// integration tests check that the real tools accept them.

func TestProceduralImageToVideoCommand(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "boat.png")
	os.WriteFile(img, []byte("png"), 0o644)
	out := filepath.Join(dir, "clip.mp4")
	fake := &fakeExec{run: func(c Command) ([]byte, error) {
		c.OnStdoutLine("out_time_us=2500000")
		return nil, os.WriteFile(out, []byte("mp4"), 0o644)
	}}
	var log progressLog
	req := RenderRequest{Model: "wan-2.2", Operation: ImageToVideo, Prompt: "a boat", Seed: 42, Resolution: "480p",
		AspectRatio: "16:9", DurationSeconds: 5, InputImages: []string{img}, OutputPath: out}
	if err := (&ProceduralRunner{Tools: &Tools{Exec: fake, FFmpeg: "/usr/bin/ffmpeg", Preset: "ultrafast"}}).Render(context.Background(), req, log.fn); err != nil {
		t.Fatal(err)
	}
	want := append(append([]string{}, ffmpegCommonArgs...),
		"-i", img,
		"-filter_complex", "[0:v]scale=1708:960:force_original_aspect_ratio=increase:flags=bicubic,crop=1708:960,setsar=1,"+
			"zoompan=z='1+0.2000':x='(iw-iw/zoom)*on/120':y='ih/2-(ih/zoom/2)':d=120:s=854x480:fps=24[base];"+
			"[base]scale=854:480:flags=bicubic,tpad=stop_mode=clone:stop_duration=1,setsar=1,format=yuv420p[v]",
		"-map", "[v]", "-frames:v", "120", "-r", "24",
		"-c:v", "libx264", "-preset", "ultrafast", "-crf", "21", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
		"-t", "5.0000", "-map_metadata", "-1", out)
	if len(fake.cmds) != 1 || fake.cmds[0].Name != "/usr/bin/ffmpeg" || !reflect.DeepEqual(fake.cmds[0].Args, want) {
		t.Errorf("command\n got %q\nwant %q", fake.cmds[0].Args, want)
	}
	if got := log.values(); !reflect.DeepEqual(got, []int{0, 49, 100}) {
		t.Errorf("progress %v", got)
	}
}

func TestProceduralArgsFollowTheRequest(t *testing.T) {
	tools := &Tools{}
	args := func(req RenderRequest) string {
		req.Model, req.Resolution, req.AspectRatio, req.DurationSeconds, req.OutputPath = "m", "720p", "16:9", 4, "/o.mp4"
		if req.Operation == ImageToVideo {
			req.InputImages = []string{"/i.png"}
		}
		r, w, h, err := req.normalized()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(proceduralArgs(tools, r, w, h), " ")
	}
	base := RenderRequest{Prompt: "a red balloon over the ocean", Seed: 1}
	first, again := args(base), args(base)
	if first != again {
		t.Error("same request, different arguments")
	}
	for name, change := range map[string]func(*RenderRequest){
		"seed":            func(r *RenderRequest) { r.Seed = 2 },
		"prompt":          func(r *RenderRequest) { r.Prompt = "a blue balloon" },
		"style":           func(r *RenderRequest) { r.Style = "anime" },
		"negative prompt": func(r *RenderRequest) { r.NegativePrompt = "red" },
	} {
		r := base
		change(&r)
		if args(r) == args(base) {
			t.Errorf("changing the %s does not change the render", name)
		}
	}
	t2v := args(base)
	for _, want := range []string{"gradients=s=640x360:r=24:d=4.0000:n=3:c0=0xCC4747:", "scale=1280:720:flags=bicubic", "-frames:v 96"} {
		if !strings.Contains(t2v, want) {
			t.Errorf("text_to_video args lack %q:\n%s", want, t2v)
		}
	}
	for style, want := range map[string]string{
		"cinematic": "drawbox=x=0:y=0:w=iw:h=ih/10:color=black:t=fill", "pixel art": "flags=neighbor",
		"anime": "lutrgb=", "comic": "edgedetect", "clay": "gblur", "3d_animation": "unsharp", "cyberpunk": "drawgrid",
		"realistic": "noise=", "noir": "hue=s=0",
	} {
		r := base
		r.Style = style
		if !strings.Contains(args(r), want) {
			t.Errorf("style %s lacks %q", style, want)
		}
	}
	fixed := RenderRequest{Operation: ImageToVideo, Prompt: "p", CameraFixed: true}
	if !strings.Contains(args(fixed), "zoompan=z='1':x='0':y='0'") {
		t.Errorf("camera_fixed still moves: %s", args(fixed))
	}
	// The discs are drawn once and looped, not drawn again on every frame.
	if n := strings.Count(t2v, "geq="); n != 3 || strings.Count(t2v, ",format=yuva420p,loop=loop=-1:size=1[s") != 3 ||
		strings.Count(t2v, ":eval=frame:eof_action=endall[o") != 3 {
		t.Errorf("text_to_video discs are not drawn once and looped:\n%s", t2v)
	}
	// Delivered clips get the delivery settings; intermediate ones
	// (auto scenes, encoded again by the composite) the fast ones.
	if !strings.Contains(t2v, "-c:v libx264 -preset veryfast -crf 21 ") {
		t.Errorf("delivered clip encoder settings: %s", t2v)
	}
	inter := base
	inter.Intermediate = true
	// An intermediate text_to_video clip also stays at the size it is
	// drawn at: the composite scales it up as the runner would have.
	if a := args(inter); !strings.Contains(a, "-c:v libx264 -preset ultrafast -crf 17 -pix_fmt yuv420p ") ||
		strings.NewReplacer("-preset ultrafast -crf 17", "-preset veryfast -crf 21",
			"[base]scale=640:360:flags=bicubic,", "[base]scale=1280:720:flags=bicubic,").Replace(a) != t2v {
		t.Errorf("intermediate clip: only the encoder settings and the output size should change:\n%s\n%s", a, t2v)
	}
	// Not when the look draws at the output size, nor for an image, which
	// is animated at the output size.
	for _, req := range []RenderRequest{
		{Operation: TextToVideo, Prompt: "p", Style: "pixel art"},
		{Operation: TextToVideo, Prompt: "p", Style: "cinematic noir film grain"},
		{Operation: ImageToVideo, Prompt: "p", InputImages: []string{"/in.png"}},
	} {
		req.Intermediate = true
		if a := args(req); !strings.Contains(a, "1280:720") || strings.Contains(a, "scale=640:360") {
			t.Errorf("%s %q, intermediate: not at the output size:\n%s", req.Operation, req.Style, a)
		}
	}
	if got := strings.Join((&Tools{Preset: "medium", CRF: 14}).intermediateX264Args(), " "); got !=
		"-c:v libx264 -preset ultrafast -crf 14 -pix_fmt yuv420p -movflags +faststart" {
		t.Errorf("intermediate with a finer CRF configured: %s", got)
	}
	sound := base
	sound.GenerateAudio = true
	if a := args(sound); !strings.Contains(a, "aevalsrc=") || !strings.Contains(a, "-map [a]") || !strings.Contains(a, "-c:a aac") {
		t.Errorf("generate_audio: %s", a)
	}
}

func TestRenderRequestValidation(t *testing.T) {
	ok := RenderRequest{Model: "m", Prompt: "p", Resolution: "720p", AspectRatio: "16:9", DurationSeconds: 5, OutputPath: "o.mp4"}
	for name, change := range map[string]func(*RenderRequest){
		"images for t2v":     func(r *RenderRequest) { r.InputImages = []string{"a"} },
		"i2v without image":  func(r *RenderRequest) { r.Operation = ImageToVideo },
		"flf with one image": func(r *RenderRequest) { r.Operation, r.InputImages = FirstLastFrame, []string{"a"} },
		"multi without":      func(r *RenderRequest) { r.Operation = MultipleImages },
		"operation":          func(r *RenderRequest) { r.Operation = "video_to_video" },
		"zero duration":      func(r *RenderRequest) { r.DurationSeconds = 0 },
		"long duration":      func(r *RenderRequest) { r.DurationSeconds = 301 },
		"fps":                func(r *RenderRequest) { r.FPS = 500 },
		"resolution":         func(r *RenderRequest) { r.Resolution = "huge" },
		"aspect":             func(r *RenderRequest) { r.AspectRatio = "wide" },
		"output":             func(r *RenderRequest) { r.OutputPath = "" },
		"movement":           func(r *RenderRequest) { r.MovementAmplitude = "wild" },
	} {
		r := ok
		change(&r)
		if _, _, _, err := r.normalized(); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
		if err := (&ProceduralRunner{Tools: &Tools{Exec: &fakeExec{}}}).Render(context.Background(), r, nil); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: Render: %v, want ErrInvalidRequest", name, err)
		}
	}
	if r, w, h, err := ok.normalized(); err != nil || r.Operation != TextToVideo || r.FPS != DefaultFPS || w != 1280 || h != 720 || !filepath.IsAbs(r.OutputPath) {
		t.Errorf("normalized %+v %dx%d %v", r, w, h, err)
	}
}

func TestFinalizeArgs(t *testing.T) {
	tools := &Tools{Preset: "medium", CRF: 18}
	for _, tc := range []struct {
		in   MediaInfo
		want string
	}{
		{MediaInfo{VideoCodec: "h264", PixFmt: "yuv420p", HasAudio: true, AudioCodec: "aac"},
			"-i c.mkv -map 0:v:0 -map 0:a:0? -c:v copy -movflags +faststart -c:a copy -map_metadata -1 -f mp4 v.mp4"},
		{MediaInfo{VideoCodec: "mpeg4", PixFmt: "yuv420p"},
			"-i c.mkv -map 0:v:0 -map 0:a:0? -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p -movflags +faststart -map_metadata -1 -f mp4 v.mp4"},
		{MediaInfo{VideoCodec: "h264", PixFmt: "yuv444p", HasAudio: true, AudioCodec: "mp3"},
			"-i c.mkv -map 0:v:0 -map 0:a:0? -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p -movflags +faststart -c:a aac -b:a 128k -ar 48000 -map_metadata -1 -f mp4 v.mp4"},
	} {
		if got := strings.Join(tools.finalizeArgs("c.mkv", "v.mp4", tc.in), " "); got != tc.want {
			t.Errorf("finalizeArgs(%+v)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	if got := strings.Join(posterArgs("v.mp4", "p.jpg", 1500*time.Millisecond), " "); got != "-ss 1.5 -i v.mp4 -frames:v 1 -update 1 -q:v 3 -f image2 -c:v mjpeg p.jpg" {
		t.Errorf("jpeg poster: %s", got)
	}
	if got := strings.Join(posterArgs("v.mp4", "p.PNG", 0), " "); got != "-ss 0 -i v.mp4 -frames:v 1 -update 1 p.PNG" {
		t.Errorf("png poster: %s", got)
	}
}

func TestProbeArgsAndParse(t *testing.T) {
	if got := strings.Join(ProbeArgs("/x.mp4"), " "); got != "-v error -print_format json -show_format -show_streams /x.mp4" {
		t.Errorf("ProbeArgs: %s", got)
	}
	info, err := parseProbe([]byte(`{"streams":[{"codec_type":"video","codec_name":"h264","width":640,"height":360,"pix_fmt":"yuv420p"},
		{"codec_type":"audio","codec_name":"aac","duration":"4.98"}],"format":{"duration":"5.013000"}}`))
	want := MediaInfo{Duration: 5013 * time.Millisecond, Width: 640, Height: 360, VideoCodec: "h264", PixFmt: "yuv420p", HasAudio: true, AudioCodec: "aac"}
	if err != nil || info != want {
		t.Errorf("parseProbe = %+v, %v", info, err)
	}
	if _, err := parseProbe([]byte("nope")); err == nil {
		t.Error("parseProbe accepted junk")
	}
}

func TestEspeakArgs(t *testing.T) {
	if got := strings.Join(espeakArgs("gmw/en-US+f3", "/o/a.wav"), " "); got != "-v gmw/en-US+f3 -s 160 -w /o/a.wav --stdin" {
		t.Errorf("espeakArgs: %s", got)
	}
}

func TestCompositeArgs(t *testing.T) {
	plan := Plan{DurationSeconds: 6, Scenes: []Scene{{Index: 0, DurationSeconds: 6, Lines: []string{"Hello world."}}}}
	lay := compositeLayout{w: 320, h: 180, fps: 24, total: 6 * time.Second, barColor: "0x112233@0.85", accent: "0xFFAA00",
		avatar: "/o/avatar.png", logo: "/b/logo.png", clips: []string{"/s/0.mp4"}, burnSRT: true,
		placed: PlaceLines(plan, []SpokenLine{{Scene: 0, Text: "Hello world.", Audio: "/t/line-000.wav", Duration: 1500 * time.Millisecond}}),
		x264:   []string{"-c:v", "libx264"}, aac: []string{"-c:a", "aac"}}
	want := []string{
		"-i", "/s/0.mp4", "-i", "/o/avatar.png", "-i", "/b/logo.png", "-i", "/t/line-000.wav",
		"-filter_complex", strings.Join([]string{
			"[0:v]scale=320:180:force_original_aspect_ratio=increase:flags=bicubic,crop=320:180,setsar=1,fps=24,format=yuv420p[c0]",
			"[c0]concat=n=1:v=1:a=0,tpad=stop_mode=clone:stop_duration=6,trim=duration=6,setpts=PTS-STARTPTS[scenes]",
			"color=c=0x112233@0.85:s=320x28:r=1:d=1,format=rgba,pad=h=30:y=2:color=0xFFAA00[bar]",
			"[scenes][bar]overlay=x=0:y=H-h[framed]",
			"[1:v]scale=54:54:force_original_aspect_ratio=increase,crop=54:54,format=rgba[avatar]",
			"[framed][avatar]overlay=x=W-w-6:y='H-h-36+1.0000*sin(2*PI*t*1.2000)':eval=frame[presented]",
			"[2:v]scale=80:18:force_original_aspect_ratio=decrease,format=rgba[logo]",
			"[presented][logo]overlay=x=W-w-6:y=6[branded]",
			"[branded]split[clean][tocaption]",
			"[tocaption]subtitles=filename=captions.srt:force_style='FontSize=15,PrimaryColour=&H00FFFFFF,OutlineColour=&H00000000,BorderStyle=1,Outline=1,Shadow=0,Alignment=2,MarginV=8'[captioned]",
			"[3:a]aresample=48000,adelay=delays=300:all=1[l0]",
			"[l0]amix=inputs=1:duration=longest:normalize=0,aformat=sample_rates=48000:channel_layouts=mono,apad,atrim=duration=6[a]",
		}, ";"),
		"-map", "[captioned]", "-map", "[a]", "-r", "24", "-c:v", "libx264", "-c:a", "aac", "-t", "6", "-map_metadata", "-1", "/o/video.mp4",
		"-map", "[clean]", "-r", "24", "-c:v", "libx264", "-t", "6", "-map_metadata", "-1", "/o/" + cleanVideoPart,
	}
	if got := compositeArgs(lay, "/o/video.mp4", "/o/"+cleanVideoPart); !reflect.DeepEqual(got, want) {
		t.Errorf("compositeArgs\n got %q\nwant %q", got, want)
	}
	// The clean video gets the narration of video.mp4, copied, not encoded again.
	if got := strings.Join(cleanMuxArgs("/o/c.part.mp4", "/o/video.mp4", "/o/clean.mp4"), " "); got !=
		"-i /o/c.part.mp4 -i /o/video.mp4 -map 0:v:0 -map 1:a:0 -c copy -movflags +faststart -map_metadata -1 -f mp4 /o/clean.mp4" {
		t.Errorf("cleanMuxArgs: %s", got)
	}

	// No narration and no captions: silence, nothing burned in; no brand
	// accent: the bar alone.
	lay.placed, lay.burnSRT, lay.logo, lay.accent = nil, false, "", ""
	got := strings.Join(compositeArgs(lay, "v", "c"), " ")
	if !strings.Contains(got, "[presented]split[clean][captioned]") || !strings.Contains(got, "anullsrc=r=48000:cl=mono,aformat") || strings.Contains(got, "subtitles") {
		t.Errorf("silent composite: %s", got)
	}
	if !strings.Contains(got, "color=c=0x112233@0.85:s=320x28:r=1:d=1,format=rgba[bar]") {
		t.Errorf("bar without accent: %s", got)
	}
}

func TestCompositeRejects(t *testing.T) {
	dir := t.TempDir()
	clip := filepath.Join(dir, "s.mp4")
	os.WriteFile(clip, []byte("x"), 0o644)
	plan := Plan{DurationSeconds: 5, Scenes: []Scene{{DurationSeconds: 5}}}
	ok := CompositeInput{Plan: plan, SceneClips: []string{clip}, OutDir: dir}
	for name, change := range map[string]func(*CompositeInput){
		"clip count":   func(in *CompositeInput) { in.SceneClips = nil },
		"missing clip": func(in *CompositeInput) { in.SceneClips = []string{filepath.Join(dir, "nope.mp4")} },
		"orientation":  func(in *CompositeInput) { in.Orientation = "square" },
		"colour":       func(in *CompositeInput) { in.Brand = &Brand{Colors: []string{"red;drawtext=x"}} },
		"resolution":   func(in *CompositeInput) { in.Resolution = "big" },
		"out dir":      func(in *CompositeInput) { in.OutDir = "" },
	} {
		in := ok
		change(&in)
		if _, err := (&Tools{Exec: &fakeExec{}}).Composite(context.Background(), in, nil); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	in := ok
	in.AvatarID = "av_nobody"
	if _, err := (&Tools{Exec: &fakeExec{}}).Composite(context.Background(), in, nil); !errors.Is(err, ErrUnknownAvatar) {
		t.Errorf("unknown avatar: %v", err)
	}
	for in, want := range map[string]string{"#1d3557": "0x1D3557", "#abc": "0xAABBCC", "E63946": "0xE63946"} {
		if got, err := ffmpegColor(in); got != want || err != nil {
			t.Errorf("ffmpegColor(%q) = %q, %v", in, got, err)
		}
	}
}

// A kit's font sets the captions; its motion style moves the presenter.
func TestCompositeBrandStyle(t *testing.T) {
	plan := Plan{DurationSeconds: 6, Scenes: []Scene{{Index: 0, DurationSeconds: 6, Lines: []string{"Hello world."}}}}
	lay := compositeLayout{w: 1280, h: 720, fps: 24, total: 6 * time.Second, barColor: "black@0.55",
		avatar: "/o/avatar.png", clips: []string{"/s/0.mp4"}, burnSRT: true, font: "DejaVu Sans",
		placed: PlaceLines(plan, []SpokenLine{{Scene: 0, Text: "Hello world.", Audio: "/t/line-000.wav", Duration: 1500 * time.Millisecond}})}
	for style, want := range map[string]string{
		"":              "y='H-h-146+3.0000*sin(2*PI*t*1.2000)':eval=frame[presented]",
		MotionSmooth:    "y='H-h-146+3.0000*sin(2*PI*t*1.2000)':eval=frame[presented]",
		"unknown":       "y='H-h-146+3.0000*sin(2*PI*t*1.2000)':eval=frame[presented]",
		MotionCalm:      "overlay=x=W-w-22:y=H-h-146[presented]",
		MotionDynamic:   "y='H-h-146+6.0000*sin(2*PI*t*1.6000)':eval=frame[presented]",
		MotionEnergetic: "y='H-h-146+9.0000*sin(2*PI*t*2.2000)':eval=frame[presented]",
	} {
		lay.motion = style
		got := strings.Join(compositeArgs(lay, "v", "c"), " ")
		if !strings.Contains(got, want) {
			t.Errorf("motion style %q: want %s in\n%s", style, want, got)
		}
		if !strings.Contains(got, ",MarginV=9,FontName=DejaVu Sans'[captioned]") {
			t.Errorf("captions not set in the kit's font:\n%s", got)
		}
	}
}

func TestPickFont(t *testing.T) {
	fcList := "DejaVu Sans,DejaVu Sans Light\nDejaVu Serif\nNoto Sans:style\n"
	for _, tc := range []struct {
		fonts []string
		want  string
	}{
		{[]string{"Brand Grotesk", "dejavu serif", "DejaVu Sans"}, "dejavu serif"}, // the first the machine has
		{[]string{"DejaVu Sans Light"}, "DejaVu Sans Light"},                       // a family's other name
		{[]string{"Brand Grotesk"}, ""},                                            // none: libass's default
		{[]string{"DejaVu Sans,Evil"}, ""},                                         // would break the style string
		{[]string{"DejaVu Serif'"}, ""},
		{nil, ""},
	} {
		if got := pickFont(tc.fonts, fcList); got != tc.want {
			t.Errorf("pickFont(%q) = %q, want %q", tc.fonts, got, tc.want)
		}
	}
	// captionFont asks fc-list for the families, once.
	fe := &fakeExec{run: func(Command) ([]byte, error) { return []byte(fcList), nil }}
	if got := (&Tools{Exec: fe}).captionFont(context.Background(), []string{"Brand Grotesk", "DejaVu Serif"}); got != "DejaVu Serif" {
		t.Errorf("captionFont = %q", got)
	}
	if len(fe.cmds) != 1 || fe.cmds[0].Name != "fc-list" {
		t.Errorf("captionFont ran %+v", fe.cmds)
	}
	failing := &fakeExec{run: func(Command) ([]byte, error) { return nil, errors.New("no fc-list") }}
	if got := (&Tools{Exec: failing}).captionFont(context.Background(), []string{"DejaVu Serif"}); got != "" {
		t.Errorf("captionFont without fc-list = %q, want the default", got)
	}
}
