package pipeline

import (
	"context"
	"fmt"
	"hash/fnv"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/avatarart"
	"github.com/vidfarm/vidfarm/models"
)

// Account avatars. An avatar made from a prompt is drawn procedurally, like
// the stock presenters: the prompt chooses colours, hair and clothing through
// the words it uses and a hash of its text. It is not an image model; a real
// portrait generator would plug in here the way model runners do. An avatar
// made from a photo is the photo cropped to a square around its centre and
// scaled to AvatarSize. Either way the result is an opaque AvatarSize square
// PNG, and the composite crops it round.

// AvatarSize is the side, in pixels, of an account avatar's picture.
const AvatarSize = 512

// MaxAvatarPrompt is the longest avatar prompt WritePromptAvatar draws from.
const MaxAvatarPrompt = models.MaxAvatarPrompt

// namedColours are the colour words an avatar prompt may use.
var namedColours = map[string]color.RGBA{
	"red": rgb(0xd62828), "orange": rgb(0xf77f00), "yellow": rgb(0xfcbf49), "gold": rgb(0xd4a017),
	"green": rgb(0x2a9d8f), "teal": rgb(0x118ab2), "blue": rgb(0x1d4ed8), "navy": rgb(0x1d3557),
	"purple": rgb(0x7b2cbf), "violet": rgb(0x8338ec), "pink": rgb(0xff70a6), "white": rgb(0xf1f1f1),
	"grey": rgb(0x8d99ae), "gray": rgb(0x8d99ae), "black": rgb(0x1b1b1b), "brown": rgb(0x6f4e37),
}

var (
	skinTones = []color.RGBA{rgb(0x8d5524), rgb(0xc68642), rgb(0xe0ac69), rgb(0xf1c27d), rgb(0xffdbac), rgb(0xa0522d)}
	hairTones = map[string]color.RGBA{
		"blonde": rgb(0xe6c15a), "blond": rgb(0xe6c15a), "ginger": rgb(0xb5651d), "auburn": rgb(0x922724),
		"grey": rgb(0x9e9e9e), "gray": rgb(0x9e9e9e), "silver": rgb(0xc0c0c0), "white": rgb(0xeeeeee),
		"black": rgb(0x0f0f0f), "brown": rgb(0x4a2c17), "dark": rgb(0x1b1b1b), "red": rgb(0xa33b20),
	}
	femaleWords = []string{"woman", "women", "female", "girl", "lady", "she", "her", "mother", "grandmother"}
	maleWords   = []string{"man", "men", "male", "boy", "guy", "he", "his", "father", "grandfather", "gentleman"}
)

// AvatarGender guesses a presenter's gender from the words of a prompt:
// models.GenderFemale or models.GenderMale, or "" when the prompt does not
// say or says both.
func AvatarGender(prompt string) string {
	words := promptWords(prompt)
	f, m := hasAny(words, femaleWords), hasAny(words, maleWords)
	switch {
	case f && !m:
		return models.GenderFemale
	case m && !f:
		return models.GenderMale
	}
	return ""
}

func promptWords(prompt string) []string {
	return strings.FieldsFunc(strings.ToLower(prompt), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func hasAny(words, set []string) bool {
	for _, w := range words {
		for _, s := range set {
			if w == s {
				return true
			}
		}
	}
	return false
}

// promptLook is the look of the avatar a prompt describes. Colour words pick,
// in order, the shirt and the background ("a man in a red jacket on a blue
// wall"); a colour word right before "hair" picks the hair; "long hair" and
// "short hair" the cut (by default long for a woman). Whatever the words leave
// open comes from a hash of the prompt, so the same prompt always draws the
// same portrait and different prompts usually draw different ones.
func promptLook(prompt, gender string) avatarart.Look {
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(strings.TrimSpace(prompt))))
	sum := h.Sum64()
	pick := func(n int, shift uint) int { return int((sum >> shift) % uint64(n)) }
	palette := []color.RGBA{rgb(0x2a9d8f), rgb(0x457b9d), rgb(0xe76f51), rgb(0x8338ec), rgb(0x06d6a0), rgb(0xffb703), rgb(0x264653), rgb(0xef476f)}
	l := avatarart.Look{
		BG:       palette[pick(len(palette), 0)],
		Shirt:    palette[pick(len(palette), 8)],
		Skin:     skinTones[pick(len(skinTones), 16)],
		Hair:     []color.RGBA{rgb(0x1b1b1b), rgb(0x4a2c17), rgb(0x6f4e37), rgb(0xb5651d)}[pick(4, 24)],
		LongHair: gender == models.GenderFemale,
	}
	if l.Shirt == l.BG {
		l.Shirt = palette[(pick(len(palette), 8)+1)%len(palette)]
	}
	words := promptWords(prompt)
	var colours []color.RGBA
	for i, w := range words {
		if i+1 < len(words) && words[i+1] == "hair" {
			if c, ok := hairTones[w]; ok {
				l.Hair = c
			}
			switch w {
			case "long":
				l.LongHair = true
			case "short", "bald":
				l.LongHair = false
			}
			continue
		}
		if c, ok := namedColours[w]; ok {
			colours = append(colours, c)
		}
	}
	if len(colours) > 0 {
		l.Shirt = colours[0]
	}
	if len(colours) > 1 {
		l.BG = colours[1]
	}
	return l
}

// WritePromptAvatar draws the portrait an avatar prompt describes (see
// promptLook) as an AvatarSize square PNG at path. gender is the avatar's
// (or "" to read it from the prompt). The picture is the same on every run.
func WritePromptAvatar(prompt, gender, path string) error {
	prompt = strings.TrimSpace(prompt)
	if prompt == "" {
		return invalidf("avatar prompt is empty")
	}
	if n := len([]rune(prompt)); n > MaxAvatarPrompt {
		return invalidf("avatar prompt has %d characters, at most %d", n, MaxAvatarPrompt)
	}
	if gender == "" {
		gender = AvatarGender(prompt)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("avatar portrait: %w", err)
	}
	if err := encodePNGFile(path, avatarart.Draw(promptLook(prompt, gender), AvatarSize, false)); err != nil {
		return fmt.Errorf("avatar portrait: %w", err)
	}
	return nil
}

// NormalizeAvatarPhoto turns a photo (any image ffmpeg reads) into an avatar
// picture: the largest centred square, scaled to AvatarSize, as an opaque PNG
// at outPNG.
func (t *Tools) NormalizeAvatarPhoto(ctx context.Context, photo, outPNG string) error {
	if err := os.MkdirAll(filepath.Dir(outPNG), 0o755); err != nil {
		return fmt.Errorf("avatar photo: %w", err)
	}
	if err := t.ffmpeg(ctx, "", avatarPhotoArgs(photo, outPNG), 0, nil); err != nil {
		return fmt.Errorf("avatar photo: %w", err)
	}
	return checkOutput(outPNG)
}

// avatarPhotoArgs crop the photo's centred square, scale it to AvatarSize
// and flatten any transparency onto black: one still frame.
func avatarPhotoArgs(photo, outPNG string) []string {
	side := strconv.Itoa(AvatarSize)
	vf := "crop='min(iw,ih)':'min(iw,ih)',scale=" + side + ":" + side + ":flags=lanczos,format=rgb24"
	return append([]string{"-i", photo, "-vf", vf}, stillArgs(outPNG)...)
}

// Speak speaks text with voiceID ("" = DefaultVoice) into an AAC .m4a file
// (AAC in an MP4 container, which every browser and phone plays)
// at outM4A (working in the file's directory) and returns its measured
// length.
func (t *Tools) Speak(ctx context.Context, text, voiceID, outM4A string) (time.Duration, error) {
	return t.SpeakWith(ctx, t, text, voiceID, outM4A)
}

// SpeakWith is Speak with the voice spoken by sp (a SpeechRouter, so that a
// speech server's voices have samples too); ffmpeg still encodes the AAC.
func (t *Tools) SpeakWith(ctx context.Context, sp Speaker, text, voiceID, outM4A string) (time.Duration, error) {
	wav := strings.TrimSuffix(outM4A, filepath.Ext(outM4A)) + ".wav"
	spoken, err := sp.Synthesize(ctx, text, voiceID, wav)
	if err != nil {
		return 0, err
	}
	if err := t.ffmpeg(ctx, "", speechArgs(wav, outM4A), spoken, nil); err != nil {
		return 0, fmt.Errorf("encode speech: %w", err)
	}
	if err := checkOutput(outM4A); err != nil {
		return 0, fmt.Errorf("encode speech: %w", err)
	}
	info, err := t.Probe(ctx, outM4A)
	if err != nil {
		return 0, fmt.Errorf("encode speech: %w", err)
	}
	return info.Duration, nil
}

// speechArgs encode a WAV to AAC with the delivery settings, index first.
func speechArgs(wav, out string) []string {
	return append(append([]string{"-i", wav, "-vn"}, aacArgs...), "-movflags", "+faststart", out)
}
