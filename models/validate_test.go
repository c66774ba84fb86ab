package models

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestValidateDefaults(t *testing.T) {
	tests := []struct {
		name string
		req  ManualRequest
		want Resolved
	}{
		{
			name: "all defaults",
			req:  ManualRequest{Model: "kling-2.1-master"},
			want: Resolved{Model: "kling-2.1-master", Operation: TextToVideo, Resolution: "1080p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 140},
		},
		{
			name: "explicit values",
			req: ManualRequest{Model: "kling-2.1-master", Operation: ImageToVideo,
				Resolution: ptr("720p"), AspectRatio: ptr("9:16"), DurationSeconds: 10},
			want: Resolved{Model: "kling-2.1-master", Operation: ImageToVideo, Resolution: "720p",
				AspectRatio: "9:16", DurationSeconds: 10, Credits: 200},
		},
		{
			name: "multiple images at the limit",
			req:  ManualRequest{Model: "vidu-q1", Operation: MultipleImages, ImageCount: 7},
			want: Resolved{Model: "vidu-q1", Operation: MultipleImages, Resolution: "1080p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 40},
		},
		{
			name: "image count ignored for other operations",
			req:  ManualRequest{Model: "kling-2.1-pro", Operation: FirstLastFrame, ImageCount: 99},
			want: Resolved{Model: "kling-2.1-pro", Operation: FirstLastFrame, Resolution: "1080p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 50},
		},
		{
			name: "4k",
			req:  ManualRequest{Model: "luma-ray-2", Resolution: ptr("4k"), DurationSeconds: 9, AspectRatio: ptr("21:9")},
			want: Resolved{Model: "luma-ray-2", Operation: TextToVideo, Resolution: "4k",
				AspectRatio: "21:9", DurationSeconds: 9, Credits: 648},
		},
		{
			name: "every advanced field a vidu model accepts",
			req: ManualRequest{Model: "vidu-q1", Seed: ptr(int64(42)), Style: ptr("anime"),
				MovementAmplitude: ptr("large")},
			want: Resolved{Model: "vidu-q1", Operation: TextToVideo, Resolution: "1080p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 40,
				Seed: ptr(int64(42)), Style: ptr("anime"), MovementAmplitude: ptr("large")},
		},
		{
			name: "every advanced field a kling model accepts, at the bounds",
			req: ManualRequest{Model: "kling-2.6-pro", NegativePrompt: ptr(strings.Repeat("é", 2500)),
				GenerateAudio: ptr(true), CfgScale: ptr(1.0)},
			want: Resolved{Model: "kling-2.6-pro", Operation: TextToVideo, Resolution: "1080p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 70,
				NegativePrompt: ptr(strings.Repeat("é", 2500)), GenerateAudio: ptr(true), CfgScale: ptr(1.0)},
		},
		{
			name: "seedance camera, seed bounds",
			req: ManualRequest{Model: "seedance-1.5-pro", Seed: ptr(int64(MaxSeed)), CameraFixed: ptr(false),
				GenerateAudio: ptr(false), DurationSeconds: 12, Resolution: ptr("480p"), AspectRatio: ptr("21:9")},
			want: Resolved{Model: "seedance-1.5-pro", Operation: TextToVideo, Resolution: "480p",
				AspectRatio: "21:9", DurationSeconds: 12, Credits: 48,
				Seed: ptr(int64(MaxSeed)), CameraFixed: ptr(false), GenerateAudio: ptr(false)},
		},
		{
			name: "auto_fix, empty negative prompt, zero cfg",
			req:  ManualRequest{Model: "wan-2.1-14b", AutoFix: ptr(true), NegativePrompt: ptr(""), Seed: ptr(int64(0))},
			want: Resolved{Model: "wan-2.1-14b", Operation: TextToVideo, Resolution: "720p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 30,
				AutoFix: ptr(true), NegativePrompt: ptr(""), Seed: ptr(int64(0))},
		},
		{
			name: "cfg_scale zero",
			req:  ManualRequest{Model: "kling-1.6-standard", CfgScale: ptr(0.0)},
			want: Resolved{Model: "kling-1.6-standard", Operation: TextToVideo, Resolution: "720p",
				AspectRatio: "16:9", DurationSeconds: 5, Credits: 25, CfgScale: ptr(0.0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(tt.req)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestValidateCopiesAdvancedFields(t *testing.T) {
	req := ManualRequest{Model: "vidu-q1", Seed: ptr(int64(7)), Style: ptr("anime")}
	got, err := Validate(req)
	if err != nil {
		t.Fatal(err)
	}
	*req.Seed, *req.Style = 8, "general"
	if *got.Seed != 7 || *got.Style != "anime" {
		t.Errorf("Resolved shares memory with the request: seed %d style %q", *got.Seed, *got.Style)
	}
}

func TestValidateUnknownModel(t *testing.T) {
	for _, id := range []string{"", "nope", "Kling-2.1-Master"} {
		_, err := Validate(ManualRequest{Model: id, Resolution: ptr("8k")})
		if !errors.Is(err, ErrUnknownModel) {
			t.Errorf("Validate(%q) = %v, want ErrUnknownModel", id, err)
		}
		var fe *FieldError
		if errors.As(err, &fe) {
			t.Errorf("Validate(%q) returned a FieldError", id)
		}
		if id != "" && !strings.Contains(err.Error(), id) {
			t.Errorf("error %q does not name %q", err, id)
		}
	}
}

func TestValidateFieldErrors(t *testing.T) {
	tests := []struct {
		name    string
		req     ManualRequest
		field   string
		allowed []string
		message string // substring, when set
	}{
		// Operation, on the field that selected it.
		{"text on image-only model", ManualRequest{Model: "kling-2.1-pro"},
			"model", []string{"image_to_video", "first_last_frame"},
			"kling-2.1-pro does not support text_to_video; it supports image_to_video (send image_url), first_last_frame (send first_frame_url and last_frame_url)"},
		{"explicit text on image-only model", ManualRequest{Model: "runway-gen4-turbo", Operation: TextToVideo},
			"model", []string{"image_to_video"}, ""},
		{"image on text-only model", ManualRequest{Model: "hunyuan-video", Operation: ImageToVideo},
			"image_url", []string{"text_to_video"}, ""},
		{"first/last frame unsupported", ManualRequest{Model: "runway-gen4-turbo", Operation: FirstLastFrame},
			"first_frame_url", []string{"image_to_video"}, ""},
		{"multiple images unsupported", ManualRequest{Model: "kling-2.1-master", Operation: MultipleImages, ImageCount: 2},
			"image_urls", []string{"text_to_video", "image_to_video"}, ""},
		{"invalid operation", ManualRequest{Model: "vidu-q1", Operation: "video_to_video"},
			"operation", []string{"text_to_video", "image_to_video", "first_last_frame", "multiple_images"}, ""},
		{"operation before resolution", ManualRequest{Model: "mochi-1", Operation: ImageToVideo, Resolution: ptr("4k")},
			"image_url", []string{"text_to_video"}, ""},

		// Resolution, duration, aspect ratio.
		{"resolution", ManualRequest{Model: "kling-2.1-master", Resolution: ptr("4k")},
			"resolution", []string{"720p", "1080p"},
			`resolution "4k" is not offered by kling-2.1-master; choose one of 720p, 1080p`},
		{"resolution case matters", ManualRequest{Model: "kling-2.1-master", Resolution: ptr("1080P")},
			"resolution", []string{"720p", "1080p"}, ""},
		{"resolution before duration", ManualRequest{Model: "mochi-1", Resolution: ptr("720p"), DurationSeconds: 7},
			"resolution", []string{"480p"}, ""},
		{"duration", ManualRequest{Model: "kling-2.1-master", DurationSeconds: 7},
			"duration_seconds", []string{"5", "10"},
			"duration_seconds 7 is not offered by kling-2.1-master; choose one of 5, 10"},
		{"negative duration", ManualRequest{Model: "veo-2", DurationSeconds: -5},
			"duration_seconds", []string{"5", "6", "7", "8"}, ""},
		{"duration before aspect ratio", ManualRequest{Model: "sora-2", DurationSeconds: 5, AspectRatio: ptr("1:1")},
			"duration_seconds", []string{"4", "8", "12"}, ""},
		{"aspect ratio", ManualRequest{Model: "kling-2.1-master", AspectRatio: ptr("4:3")},
			"aspect_ratio", []string{"16:9", "9:16", "1:1"},
			`aspect_ratio "4:3" is not offered by kling-2.1-master; choose one of 16:9, 9:16, 1:1`},
		// A sent "" is a value, not "the default" (the API only passes one
		// the client sent): refused with the model's values, not priced.
		{"resolution empty string", ManualRequest{Model: "veo-3", Resolution: ptr("")},
			"resolution", []string{"720p", "1080p"},
			"resolution must not be empty; leave it out for veo-3's default (720p) or choose one of 720p, 1080p"},
		{"aspect ratio empty string", ManualRequest{Model: "veo-3", Resolution: ptr("1080p"), AspectRatio: ptr("")},
			"aspect_ratio", []string{"16:9", "9:16"},
			"aspect_ratio must not be empty; leave it out for veo-3's default (16:9) or choose one of 16:9, 9:16"},
		{"operation before empty resolution", ManualRequest{Model: "mochi-1", Operation: ImageToVideo, Resolution: ptr("")},
			"image_url", []string{"text_to_video"}, ""},
		{"empty resolution before duration", ManualRequest{Model: "kling-2.1-master", Resolution: ptr(""), DurationSeconds: 7},
			"resolution", []string{"720p", "1080p"}, ""},
		{"aspect ratio before images", ManualRequest{Model: "veo-3.1", Operation: MultipleImages, AspectRatio: ptr("1:1"), ImageCount: 9},
			"aspect_ratio", []string{"16:9", "9:16"}, ""},

		// Image count.
		{"too many images", ManualRequest{Model: "vidu-q1", Operation: MultipleImages, ImageCount: 8},
			"image_urls", []string{"1..7"}, "vidu-q1 accepts 1 to 7 image_urls; got 8"},
		{"no images", ManualRequest{Model: "kling-1.6-standard", Operation: MultipleImages},
			"image_urls", []string{"1..4"}, ""},
		{"images before advanced", ManualRequest{Model: "pixverse-v5", Operation: MultipleImages, ImageCount: 4, CfgScale: ptr(0.5)},
			"image_urls", []string{"1..3"}, ""},

		// negative_prompt.
		{"negative prompt too long", ManualRequest{Model: "veo-3", NegativePrompt: ptr(strings.Repeat("é", 2501))},
			"negative_prompt", []string{"0..2500"}, "negative_prompt is 2501 characters long"},
		{"negative prompt unsupported", ManualRequest{Model: "seedance-1.0-pro", NegativePrompt: ptr("blur")},
			"negative_prompt", []string{"seed", "camera_fixed"},
			"seedance-1.0-pro does not accept negative_prompt; it accepts seed, camera_fixed"},

		// seed.
		{"seed negative", ManualRequest{Model: "mochi-1", Seed: ptr(int64(-1))},
			"seed", []string{"0..2147483647"},
			"seed -1 is out of range for mochi-1; use an integer from 0 to 2147483647"},
		{"seed too large", ManualRequest{Model: "mochi-1", Seed: ptr(int64(MaxSeed) + 1)},
			"seed", []string{"0..2147483647"}, ""},
		{"seed huge", ManualRequest{Model: "mochi-1", Seed: ptr(int64(math.MaxInt64))},
			"seed", []string{"0..2147483647"}, ""},
		{"seed unsupported", ManualRequest{Model: "kling-2.1-master", Seed: ptr(int64(1))},
			"seed", []string{"negative_prompt", "cfg_scale"}, ""},

		// generate_audio.
		{"audio unsupported", ManualRequest{Model: "veo-2", GenerateAudio: ptr(true)},
			"generate_audio", []string{"negative_prompt", "seed", "auto_fix"}, ""},
		{"audio on always-audio model", ManualRequest{Model: "sora-2", GenerateAudio: ptr(false)},
			"generate_audio", []string{}, "sora-2 does not accept generate_audio; it accepts no advanced fields"},

		// style.
		{"style not offered", ManualRequest{Model: "vidu-q1", Style: ptr("cinematic")},
			"style", []string{"general", "anime"},
			`style "cinematic" is not offered by vidu-q1; choose one of general, anime`},
		{"style empty string", ManualRequest{Model: "pixverse-v4.5", Style: ptr("")},
			"style", []string{"anime", "3d_animation", "clay", "comic", "cyberpunk"}, ""},
		// A model without styles: allowed lists its styles (none), not the
		// names of the parameters it accepts, which are no style values.
		{"style on model without styles", ManualRequest{Model: "vidu-2.0", Operation: ImageToVideo, Style: ptr("anime")},
			"style", []string{}, "vidu-2.0 takes no style (its styles in GET /v1/models are empty); leave style out"},
		{"style on veo-3", ManualRequest{Model: "veo-3", Style: ptr("anime")},
			"style", []string{}, "veo-3 takes no style"},
		{"style on kling-2.1-master", ManualRequest{Model: "kling-2.1-master", Style: ptr("")},
			"style", []string{}, "kling-2.1-master takes no style"},
		{"style on model without advanced fields", ManualRequest{Model: "sora-2", Style: ptr("anime")},
			"style", []string{}, "sora-2 takes no style"},

		// movement_amplitude.
		{"movement invalid", ManualRequest{Model: "vidu-2.0", Operation: ImageToVideo, MovementAmplitude: ptr("huge")},
			"movement_amplitude", []string{"auto", "small", "medium", "large"}, ""},
		{"movement on kling", ManualRequest{Model: "kling-2.5-turbo-pro", MovementAmplitude: ptr("small")},
			"movement_amplitude", []string{"negative_prompt", "cfg_scale"}, ""},

		// cfg_scale.
		{"cfg above", ManualRequest{Model: "kling-2.1-master", CfgScale: ptr(1.5)},
			"cfg_scale", []string{"0..1"},
			"cfg_scale 1.5 is out of range for kling-2.1-master; use a number from 0 to 1"},
		{"cfg below", ManualRequest{Model: "kling-2.1-master", CfgScale: ptr(-0.1)},
			"cfg_scale", []string{"0..1"}, ""},
		{"cfg NaN", ManualRequest{Model: "kling-2.1-master", CfgScale: ptr(math.NaN())},
			"cfg_scale", []string{"0..1"}, ""},
		{"cfg infinite", ManualRequest{Model: "kling-2.1-master", CfgScale: ptr(math.Inf(1))},
			"cfg_scale", []string{"0..1"}, ""},
		{"cfg on vidu", ManualRequest{Model: "vidu-q1", CfgScale: ptr(0.5)},
			"cfg_scale", []string{"seed", "style", "movement_amplitude"}, ""},

		// camera_fixed, auto_fix.
		{"camera on kling", ManualRequest{Model: "kling-2.1-master", CameraFixed: ptr(true)},
			"camera_fixed", []string{"negative_prompt", "cfg_scale"}, ""},
		{"auto fix on luma", ManualRequest{Model: "luma-ray-2", AutoFix: ptr(true)},
			"auto_fix", []string{}, ""},

		// Order among advanced fields.
		{"negative prompt before seed", ManualRequest{Model: "runway-gen4-turbo", Operation: ImageToVideo,
			NegativePrompt: ptr("x"), Seed: ptr(int64(-1))},
			"negative_prompt", []string{"seed"}, ""},
		{"seed before cfg", ManualRequest{Model: "kling-2.1-master", Seed: ptr(int64(1)), CfgScale: ptr(2.0)},
			"seed", []string{"negative_prompt", "cfg_scale"}, ""},
		{"style before movement", ManualRequest{Model: "vidu-q1", Style: ptr("x"), MovementAmplitude: ptr("y")},
			"style", []string{"general", "anime"}, ""},
		{"camera before auto fix", ManualRequest{Model: "hailuo-02", CameraFixed: ptr(true), AutoFix: ptr(true)},
			"camera_fixed", []string{"auto_fix"}, ""},
		{"advanced after everything else", ManualRequest{Model: "kling-2.1-master", DurationSeconds: 6, CfgScale: ptr(2.0)},
			"duration_seconds", []string{"5", "10"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Validate(tt.req)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %+v, %v; want a *FieldError", got, err)
			}
			if errors.Is(err, ErrUnknownModel) {
				t.Error("FieldError matches ErrUnknownModel")
			}
			if fe.Field != tt.field {
				t.Errorf("field = %q, want %q (%s)", fe.Field, tt.field, fe.Message)
			}
			if fe.Allowed == nil || !slices.Equal(fe.Allowed, tt.allowed) {
				t.Errorf("allowed = %#v, want %#v", fe.Allowed, tt.allowed)
			}
			if fe.Model != tt.req.Model {
				t.Errorf("model = %q, want %q", fe.Model, tt.req.Model)
			}
			if fe.Message == "" || fe.Error() != fe.Message {
				t.Errorf("message %q, Error() %q", fe.Message, fe.Error())
			}
			if tt.message != "" && !strings.Contains(fe.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", fe.Message, tt.message)
			}
			if got != (Resolved{}) {
				t.Errorf("Resolved not zero on error: %+v", got)
			}
		})
	}
}

func TestValidateAllowedIsACopy(t *testing.T) {
	_, err := Validate(ManualRequest{Model: "vidu-q1", Style: ptr("x")})
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatal(err)
	}
	fe.Allowed[0] = "changed"
	m, _ := Get("vidu-q1")
	if m.Styles[0] != "general" || m.Parameters[1].Enum[0] != "general" {
		t.Fatal("FieldError.Allowed shares the catalog's slice")
	}
}

func TestFieldErrorWithoutMessage(t *testing.T) {
	e := &FieldError{Field: "resolution", Model: "veo-3"}
	if got := e.Error(); got != "invalid resolution for model veo-3" {
		t.Errorf("Error() = %q", got)
	}
}

// TestValidateEveryModel walks every model's offer: each operation,
// resolution, duration and aspect ratio validates and is priced at
// credits_per_second * duration, and each advanced field is accepted exactly
// when the model lists it.
func TestValidateEveryModel(t *testing.T) {
	for _, m := range All() {
		t.Run(m.ID, func(t *testing.T) {
			for _, op := range m.Operations {
				for _, res := range m.Resolutions {
					for _, d := range m.Durations {
						for _, ar := range m.AspectRatios {
							req := ManualRequest{Model: m.ID, Operation: op, Resolution: ptr(res),
								DurationSeconds: d, AspectRatio: ptr(ar), ImageCount: m.MaxImages}
							got, err := Validate(req)
							if err != nil {
								t.Fatalf("%+v: %v", req, err)
							}
							if want := m.CreditsPerSecond[res] * d; got.Credits != want || got.Credits != m.Credits(res, d) {
								t.Fatalf("%+v: credits %d, want %d", req, got.Credits, want)
							}
						}
					}
				}
			}
			for _, op := range Operations() {
				if m.Supports(op) {
					continue
				}
				_, err := Validate(ManualRequest{Model: m.ID, Operation: op, ImageCount: 1})
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != op.RequestField() {
					t.Errorf("%s: %v", op, err)
				}
			}

			op := m.Operations[0]
			for _, name := range ParamNames() {
				req := ManualRequest{Model: m.ID, Operation: op, ImageCount: 1}
				setValidParam(&req, m, name)
				_, err := Validate(req)
				_, accepts := m.Param(name)
				if accepts && err != nil {
					t.Errorf("%s: valid value refused: %v", name, err)
				}
				if !accepts {
					// A field the model does not take lists the fields it
					// does; style, a choice among the model's styles,
					// lists those (none).
					want := m.ParamNames()
					if name == ParamStyle {
						want = m.Styles
					}
					var fe *FieldError
					if !errors.As(err, &fe) || fe.Field != name || !slices.Equal(fe.Allowed, want) {
						t.Errorf("%s: not accepted but Validate = %v", name, err)
					}
				}
			}
		})
	}
}

func setValidParam(req *ManualRequest, m Model, name string) {
	switch name {
	case ParamNegativePrompt:
		req.NegativePrompt = ptr("low quality")
	case ParamSeed:
		req.Seed = ptr(int64(123))
	case ParamGenerateAudio:
		req.GenerateAudio = ptr(true)
	case ParamStyle:
		s := "anime"
		if len(m.Styles) > 0 {
			s = m.Styles[len(m.Styles)-1]
		}
		req.Style = &s
	case ParamMovementAmplitude:
		req.MovementAmplitude = ptr("medium")
	case ParamCfgScale:
		req.CfgScale = ptr(0.5)
	case ParamCameraFixed:
		req.CameraFixed = ptr(true)
	case ParamAutoFix:
		req.AutoFix = ptr(false)
	default:
		panic(name)
	}
}
