package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// writeWAV writes a 16-bit mono PCM WAV of n samples at rate; a non-zero
// declaredData overrides the data chunk's size field.
func writeWAV(t *testing.T, path string, rate, n int, declaredData uint32) {
	t.Helper()
	data := uint32(2 * n)
	if declaredData != 0 {
		data = declaredData
	}
	var b []byte
	le := binary.LittleEndian
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, 36+data)
	b = append(b, "WAVE"...)
	b = append(b, "LIST"...) // an extra chunk before fmt, as some writers add
	b = le.AppendUint32(b, 3)
	b = append(b, 'a', 'b', 'c', 0) // odd size, padded
	b = append(b, "fmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*2))
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = le.AppendUint32(b, data)
	b = append(b, make([]byte, 2*n)...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWAVDuration(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.wav")
	writeWAV(t, ok, 22050, 11025, 0)
	if d, err := WAVDuration(ok); err != nil || d != 500*time.Millisecond {
		t.Errorf("WAVDuration = %v, %v; want 500ms", d, err)
	}
	streamed := filepath.Join(dir, "streamed.wav")
	writeWAV(t, streamed, 16000, 4000, 0x7fffffff)
	if d, err := WAVDuration(streamed); err != nil || d != 250*time.Millisecond {
		t.Errorf("streamed WAVDuration = %v, %v; want 250ms", d, err)
	}
	junk := filepath.Join(dir, "junk.wav")
	os.WriteFile(junk, []byte("not a wav file at all"), 0o644)
	if _, err := WAVDuration(junk); !errors.Is(err, ErrNoOutput) {
		t.Errorf("junk: %v", err)
	}
}

func TestSynthesizeArguments(t *testing.T) {
	out := filepath.Join(t.TempDir(), "speech", "hello.wav")
	var stdin string
	fake := &fakeExec{run: func(c Command) ([]byte, error) {
		switch {
		case c.Args[0] == "--voices":
			return []byte(voicesFixture), nil
		case c.Args[0] == "--voices=variant":
			return []byte(variantsFixture), nil
		}
		b, _ := io.ReadAll(c.Stdin)
		stdin = string(b)
		writeWAV(t, c.Args[5], 22050, 22050, 0)
		return nil, nil
	}}
	tools := &Tools{Exec: fake}
	d, err := tools.Synthesize(context.Background(), "  -v Hello\tthere  ", "en-us+f3", out)
	if err != nil || d != time.Second {
		t.Fatalf("Synthesize = %v, %v", d, err)
	}
	last := fake.cmds[len(fake.cmds)-1]
	if want := []string{"-v", "gmw/en-US+f3", "-s", "160", "-w", out, "--stdin"}; last.Name != "espeak-ng" || !reflect.DeepEqual(last.Args, want) {
		t.Errorf("espeak-ng command %s %q, want %q", last.Name, last.Args, want)
	}
	if stdin != "-v Hello there" {
		t.Errorf("stdin %q", stdin)
	}
	if _, err := tools.Synthesize(context.Background(), "hi", "xx-nope", out); !errors.Is(err, ErrUnknownVoice) {
		t.Errorf("unknown voice: %v", err)
	}
	if _, err := tools.Synthesize(context.Background(), " \n ", "", out); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty text: %v", err)
	}
}

func TestSynthesizeReal(t *testing.T) {
	requireTools(t, "espeak-ng", "ffprobe")
	tools := testTools()
	dir := t.TempDir()
	for _, voice := range []string{"en-us", "fr-fr+f2", "chr-us-qaaa-x-west"} {
		out := filepath.Join(dir, voice+".wav")
		d, err := tools.Synthesize(testCtx(t), "The quick brown fox jumps over the lazy dog.", voice, out)
		if err != nil {
			t.Fatalf("%s: %v", voice, err)
		}
		info := probe(t, out)
		if d < time.Second || d > 15*time.Second || !info.HasAudio || !near(info.Duration, d, 50*time.Millisecond) {
			t.Errorf("%s: measured %v, ffprobe %+v", voice, d, info)
		}
	}
}

func TestNarrate(t *testing.T) {
	requireTools(t, "espeak-ng")
	plan, err := NewPlan("Rain falls on the city. Umbrellas open everywhere.", 8, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log progressLog
	lines, err := testTools().Narrate(testCtx(t), plan, "", t.TempDir(), log.fn)
	if err != nil {
		t.Fatal(err)
	}
	checkProgress(t, log.values())
	if len(lines) != len(plan.Lines()) {
		t.Fatalf("%d spoken lines for %d planned", len(lines), len(plan.Lines()))
	}
	for i, l := range lines {
		if l.Text != plan.Lines()[i] || l.Duration <= 0 || filepath.Base(l.Audio) != fmt.Sprintf("line-%03d.wav", i) {
			t.Errorf("line %d: %+v", i, l)
		}
	}
}
