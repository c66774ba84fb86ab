package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// espeakOutput answers espeak-ng --voices and --voices=variant from fixed
// tables, as a pipeline.Executor.
type espeakOutput struct {
	langs, variants string
	err             error
	calls           int
}

func (e *espeakOutput) Run(_ context.Context, c pipeline.Command) ([]byte, error) {
	e.calls++
	if e.err != nil {
		return nil, e.err
	}
	if slices.Contains(c.Args, "--voices=variant") {
		return []byte(e.variants), nil
	}
	return []byte(e.langs), nil
}

const (
	fakeLangs = `Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  af              --/M      Afrikaans          gmw/af
 2  en-us           --/M      English_(America)  gmw/en-US            (en 3)
 5  fr-fr           --/M      French_(France)    roa/fr               (fr 5)
`
	fakeVariants = `Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  variant         70/F      female1            !v/f1
 5  variant         70/M      male1              !v/m1
`
)

func withoutEspeak(c Capacity) Capacity {
	c.Tools = slices.DeleteFunc(slices.Clone(c.Tools), func(t Tool) bool { return t.Name == "espeak-ng" })
	return c
}

func TestWireVoicesFromEspeak(t *testing.T) {
	cpu, _ := cpuMachine()
	ex := &espeakOutput{langs: fakeLangs, variants: fakeVariants}
	voices, skipped, err := wireVoices(context.Background(), &pipeline.Tools{Exec: ex}, nil, cpu)
	if err != nil || skipped != 0 {
		t.Fatalf("wireVoices: %v (skipped %d)", err, skipped)
	}
	var ids []string
	for _, v := range voices {
		ids = append(ids, v.ID)
	}
	if got := strings.Join(ids, " "); got != "af af+f1 af+m1 en-us en-us+f1 en-us+m1 fr-fr fr-fr+f1 fr-fr+m1" {
		t.Fatalf("voice ids: %s", got)
	}
	if want := (wire.Voice{ID: "en-us+f1", Name: "English (America), Female 1", Language: "en-us", Gender: "female"}); voices[4] != want {
		t.Fatalf("voices[4] = %+v, want %+v", voices[4], want)
	}
	if err := wire.CheckVoices(voices); err != nil {
		t.Fatalf("the control plane would refuse them: %v", err)
	}
}

func TestWireVoicesWithoutEspeak(t *testing.T) {
	cpu, _ := cpuMachine()
	ex := &espeakOutput{langs: fakeLangs, variants: fakeVariants}
	voices, _, err := wireVoices(context.Background(), &pipeline.Tools{Exec: ex}, nil, withoutEspeak(cpu))
	if !errors.Is(err, errNoEspeak) || voices != nil || ex.calls != 0 {
		t.Fatalf("no espeak-ng found: %v, %v, %d calls", voices, err, ex.calls)
	}
	broken := &espeakOutput{err: fmt.Errorf("%w: espeak-ng", pipeline.ErrToolMissing)}
	voices, _, err = wireVoices(context.Background(), &pipeline.Tools{Exec: broken}, nil, cpu)
	if err == nil || errors.Is(err, errNoEspeak) || voices != nil {
		t.Fatalf("espeak-ng failing: %v, %v", voices, err)
	}
}

// Voices the control plane would refuse are left out, not sent.
func TestWireVoicesLeavesOutWhatTheControlPlaneRefuses(t *testing.T) {
	cpu, _ := cpuMachine()
	langs := fakeLangs + " 5  en-us           --/M      English_(again)    gmw/en-US\n" + // same file: not listed twice by pipeline
		" 5  xx              --/M      " + strings.Repeat("N", 200) + " xx/xx\n" // name too long
	ex := &espeakOutput{langs: langs, variants: fakeVariants}
	voices, skipped, err := wireVoices(context.Background(), &pipeline.Tools{Exec: ex}, nil, cpu)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 3 || len(voices) != 9 { // xx and its two variants
		t.Fatalf("skipped %d, kept %d", skipped, len(voices))
	}
	if err := wire.CheckVoices(voices); err != nil {
		t.Fatal(err)
	}
}

// With espeak-ng installed, the agent registers every voice it offers:
// well over 100.
func TestAgentRegistersEspeakVoices(t *testing.T) {
	requireTools(t, "espeak-ng")
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	startAgent(t, cfg)
	waitFor(t, "registration", func() bool { return len(f.snapshot().registrations) == 1 })
	got := f.snapshot().registrations[0].Capacity.Voices
	if len(got) <= 100 {
		t.Fatalf("registered %d voices, want over 100", len(got))
	}
	if err := wire.CheckVoices(got); err != nil {
		t.Fatalf("registered voices the control plane refuses: %v", err)
	}
	want, err := cfg.Tools.ListVoices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("registered %d voices, espeak-ng lists %d", len(got), len(want))
	}
	ids := map[string]bool{}
	for _, v := range got {
		ids[v.ID] = true
	}
	for _, id := range []string{pipeline.DefaultVoice, "en-us+f3", "fr-fr"} {
		if !ids[id] {
			t.Errorf("voice %s not registered", id)
		}
	}
}

// A node whose discovery finds no espeak-ng registers no voices.
func TestAgentWithoutEspeakRegistersNoVoices(t *testing.T) {
	t.Parallel()
	f := newFakeCP(t)
	cfg := testConfig(t, f)
	cfg.Discover = func() (Capacity, error) { c, err := cpuMachine(); return withoutEspeak(c), err }
	startAgent(t, cfg)
	waitFor(t, "registration", func() bool { return len(f.snapshot().registrations) == 1 })
	if c := f.snapshot().registrations[0].Capacity; c.Voices != nil || slices.Contains(c.Tools, "espeak-ng") {
		t.Fatalf("capacity without espeak-ng: tools %v, %d voices", c.Tools, len(c.Voices))
	}
}
