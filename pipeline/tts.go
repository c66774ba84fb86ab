package pipeline

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SpeechRate is the rate, in words per minute, espeak-ng speaks at. It is a
// little above DefaultWordsPerMinute so that planned narration fits.
const SpeechRate = 160

// MaxSpeechChars is the longest text Synthesize accepts in one call.
const MaxSpeechChars = 5000

// Synthesize speaks text with the voice voiceID ("" = DefaultVoice) into a
// WAV file at outWAV and returns the measured length of the audio.
func (t *Tools) Synthesize(ctx context.Context, text, voiceID, outWAV string) (time.Duration, error) {
	text = strings.TrimSpace(normalizeText(text))
	if text == "" {
		return 0, invalidf("speech text is empty")
	}
	if n := len([]rune(text)); n > MaxSpeechChars {
		return 0, invalidf("speech text has %d characters, at most %d", n, MaxSpeechChars)
	}
	voiceID = orDefault(voiceID, DefaultVoice)
	voiceArg, err := t.espeakVoice(ctx, voiceID)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(outWAV), 0o755); err != nil {
		return 0, fmt.Errorf("synthesize: %w", err)
	}
	_, err = t.exec().Run(ctx, Command{
		Name:  t.espeakBin(),
		Args:  espeakArgs(voiceArg, outWAV),
		Stdin: strings.NewReader(text),
	})
	if err != nil {
		return 0, fmt.Errorf("synthesize with voice %s: %w", voiceID, err)
	}
	// espeak-ng exits 0 even when it cannot write the file.
	if err := checkOutput(outWAV); err != nil {
		return 0, fmt.Errorf("synthesize with voice %s: %w", voiceID, err)
	}
	d, err := WAVDuration(outWAV)
	if err != nil {
		return 0, fmt.Errorf("synthesize with voice %s: %w", voiceID, err)
	}
	return d, nil
}

// espeakArgs are the espeak-ng arguments that speak stdin (never parsed as
// options or SSML) into a WAV file.
func espeakArgs(voice, outWAV string) []string {
	return []string{"-v", voice, "-s", strconv.Itoa(SpeechRate), "-w", outWAV, "--stdin"}
}

// espeakVoice returns the espeak-ng -v argument of a voice id. It runs once per
// spoken line, so it reads the cache in place rather than copying the list.
func (t *Tools) espeakVoice(ctx context.Context, id string) (string, error) {
	t.voicesMu.Lock()
	defer t.voicesMu.Unlock()
	if err := t.loadVoicesLocked(ctx); err != nil {
		return "", err
	}
	if arg, ok := t.voiceArgs[id]; ok {
		return arg, nil
	}
	return "", fmt.Errorf("%w: %q (see ListVoices for the %d ids)", ErrUnknownVoice, id, len(t.voices))
}

// SpokenLine is one narration line as spoken by the tts stage.
type SpokenLine struct {
	Scene    int           `json:"scene"` // index into Plan.Scenes
	Text     string        `json:"text"`
	Audio    string        `json:"audio"`    // WAV file
	Duration time.Duration `json:"duration"` // measured
}

// Narrate speaks every line of plan with voiceID and espeak-ng into dir
// (line-000.wav, line-001.wav, …) and returns the lines with their
// measured durations.
func (t *Tools) Narrate(ctx context.Context, plan Plan, voiceID, dir string, progress ProgressFunc) ([]SpokenLine, error) {
	return Narrate(ctx, t, plan, voiceID, dir, progress)
}

// Narrate is Tools.Narrate with any Speaker: a SpeechServer, or a
// SpeechRouter that picks espeak-ng or a speech server by voice.
func Narrate(ctx context.Context, t Speaker, plan Plan, voiceID, dir string, progress ProgressFunc) ([]SpokenLine, error) {
	rep := newReporter(progress)
	total := len(plan.Lines())
	var out []SpokenLine
	for _, sc := range plan.Scenes {
		for _, text := range sc.Lines {
			wav := filepath.Join(dir, fmt.Sprintf("line-%03d.wav", len(out)))
			d, err := t.Synthesize(ctx, text, voiceID, wav)
			if err != nil {
				return nil, fmt.Errorf("narrate line %d: %w", len(out), err)
			}
			out = append(out, SpokenLine{Scene: sc.Index, Text: text, Audio: wav, Duration: d})
			rep.report(len(out) * 100 / max(total, 1))
		}
	}
	rep.report(100)
	return out, nil
}

// WAVDuration reads the length of a PCM WAV file from its header. A data
// chunk whose declared size runs past the end of the file (as written by a
// program that could not seek back) is measured by the bytes present.
func WAVDuration(path string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("wav: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("wav: %w", err)
	}
	var riff [12]byte
	if _, err := io.ReadFull(f, riff[:]); err != nil || string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return 0, fmt.Errorf("wav %s: %w: not a RIFF/WAVE file", path, ErrNoOutput)
	}
	pos := int64(12)
	var byteRate uint32
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(f, hdr[:]); err != nil {
			return 0, fmt.Errorf("wav %s: %w: no data chunk", path, ErrNoOutput)
		}
		size := int64(binary.LittleEndian.Uint32(hdr[4:8]))
		pos += 8
		switch string(hdr[0:4]) {
		case "fmt ":
			var fmtChunk [16]byte
			if _, err := io.ReadFull(f, fmtChunk[:]); err != nil {
				return 0, fmt.Errorf("wav %s: short fmt chunk: %w", path, err)
			}
			byteRate = binary.LittleEndian.Uint32(fmtChunk[8:12])
		case "data":
			if byteRate == 0 {
				return 0, fmt.Errorf("wav %s: %w: data before fmt chunk", path, ErrNoOutput)
			}
			size = min(size, st.Size()-pos)
			return time.Duration(float64(size) / float64(byteRate) * float64(time.Second)), nil
		}
		pos += size + size%2 // chunks are padded to even sizes
		if _, err := f.Seek(pos, io.SeekStart); err != nil {
			return 0, fmt.Errorf("wav %s: %w", path, err)
		}
	}
}
