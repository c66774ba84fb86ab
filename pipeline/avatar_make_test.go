package pipeline

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/models"
)

func TestAvatarGender(t *testing.T) {
	for prompt, want := range map[string]string{
		"A friendly woman with short hair":        models.GenderFemale,
		"an older MAN in a suit":                  models.GenderMale,
		"a robot presenter":                       "",
		"a man and a woman":                       "",
		"manager of the human resources team":     "", // words, not substrings
		"She presents the weather, in a red coat": models.GenderFemale,
	} {
		if got := AvatarGender(prompt); got != want {
			t.Errorf("AvatarGender(%q) = %q, want %q", prompt, got, want)
		}
	}
}

func decodePNGFile(t *testing.T, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func TestWritePromptAvatar(t *testing.T) {
	dir := t.TempDir()
	write := func(name, prompt, gender string) (string, []byte) {
		t.Helper()
		path := filepath.Join(dir, name+".png")
		if err := WritePromptAvatar(prompt, gender, path); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		return path, data
	}
	p1, a := write("a", "a cheerful woman in a red jacket on a blue wall", "")
	_, again := write("again", "a cheerful woman in a red jacket on a blue wall", "")
	_, other := write("b", "a calm man with grey hair", "")
	if !bytes.Equal(a, again) {
		t.Error("the same prompt drew two different portraits")
	}
	if bytes.Equal(a, other) {
		t.Error("two different prompts drew the same portrait")
	}
	img := decodePNGFile(t, p1)
	if img.Bounds() != image.Rect(0, 0, AvatarSize, AvatarSize) {
		t.Fatalf("bounds %v", img.Bounds())
	}
	// Opaque everywhere (the composite crops it round), the background blue
	// and the shirt, at the bottom centre, red: the prompt's colour words.
	if _, _, _, alpha := img.At(0, 0).RGBA(); alpha != 0xffff {
		t.Error("corner is not opaque")
	}
	if got := color.RGBAModel.Convert(img.At(4, 4)).(color.RGBA); got != namedColours["blue"] {
		t.Errorf("background %v, want blue %v", got, namedColours["blue"])
	}
	if got := color.RGBAModel.Convert(img.At(AvatarSize/2, AvatarSize-4)).(color.RGBA); got != namedColours["red"] {
		t.Errorf("shirt %v, want red %v", got, namedColours["red"])
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxAvatarPrompt+1)} {
		if err := WritePromptAvatar(bad, "", filepath.Join(dir, "bad.png")); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("prompt of %d characters: %v, want ErrInvalidRequest", len(bad), err)
		}
	}
}

func TestAvatarPhotoArgs(t *testing.T) {
	got := strings.Join(avatarPhotoArgs("in.jpg", "out.png"), " ")
	want := "-i in.jpg -vf crop='min(iw,ih)':'min(iw,ih)',scale=512:512:flags=lanczos,format=rgb24 -frames:v 1 -update 1 out.png"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
}

// A wide photo: left third green, middle third red, right third blue. The
// avatar is its centred square, so red from edge to edge.
func TestNormalizeAvatarPhoto(t *testing.T) {
	requireTools(t, "ffmpeg")
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 900, 300))
	for y := range 300 {
		for x := range 900 {
			c := color.RGBA{0, 200, 0, 255}
			switch {
			case x >= 600:
				c = color.RGBA{0, 0, 200, 255}
			case x >= 300:
				c = color.RGBA{200, 0, 0, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	in := filepath.Join(dir, "wide.png")
	if err := encodePNGFile(in, img); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "avatar", "avatar.png")
	if err := testTools().NormalizeAvatarPhoto(testCtx(t), in, out); err != nil {
		t.Fatal(err)
	}
	got := decodePNGFile(t, out)
	if got.Bounds() != image.Rect(0, 0, AvatarSize, AvatarSize) {
		t.Fatalf("bounds %v", got.Bounds())
	}
	for _, x := range []int{8, AvatarSize / 2, AvatarSize - 8} {
		r, g, b, _ := got.At(x, AvatarSize/2).RGBA()
		if r>>8 < 180 || g>>8 > 30 || b>>8 > 30 {
			t.Errorf("pixel at x=%d is %d,%d,%d; want the red middle", x, r>>8, g>>8, b>>8)
		}
	}
	if err := testTools().NormalizeAvatarPhoto(testCtx(t), filepath.Join(dir, "missing.png"), out+"2.png"); !errors.Is(err, ErrToolFailed) {
		t.Errorf("missing photo: %v, want ErrToolFailed", err)
	}
}

func TestSpeak(t *testing.T) {
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	dir := t.TempDir()
	out := filepath.Join(dir, "speech.m4a")
	d, err := testTools().Speak(testCtx(t), "Hello from the render farm.", "en-us+f3", out)
	if err != nil {
		t.Fatal(err)
	}
	info := probe(t, out)
	if d <= 500*time.Millisecond || info.AudioCodec != "aac" || info.VideoCodec != "" {
		t.Fatalf("speech of %v: %+v", d, info)
	}
	if _, err := testTools().Speak(testCtx(t), "Hello.", "xx-nope", out); !errors.Is(err, ErrUnknownVoice) {
		t.Errorf("unknown voice: %v, want ErrUnknownVoice", err)
	}
}

// BenchmarkWritePromptAvatar draws one 512×512 portrait from a prompt.
func BenchmarkWritePromptAvatar(b *testing.B) {
	path := filepath.Join(b.TempDir(), "a.png")
	for b.Loop() {
		if err := WritePromptAvatar("a cheerful woman in a red jacket on a blue wall", "", path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpeak speaks a 300-character sample (the contract's longest) into
// AAC: the work of one speech task.
func BenchmarkSpeak(b *testing.B) {
	requireTools(b, "espeak-ng", "ffmpeg", "ffprobe")
	text := strings.Repeat("The render farm speaks clearly. ", 10)[:300]
	out := filepath.Join(b.TempDir(), "speech.m4a")
	tools := &Tools{}
	for b.Loop() {
		if _, err := tools.Speak(context.Background(), text, "en-us", out); err != nil {
			b.Fatal(err)
		}
	}
}
