package pipeline

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var planPrompts = map[string]string{
	"one word": "Volcanoes.",
	"short":    "Explain how honeybees make honey and why hives need a queen.",
	"medium": "A tour of an old lighthouse on a stormy coast. The keeper climbs the stairs at dusk, carrying a lantern. " +
		"Waves crash against the rocks below! Ships far out at sea look for the light? At dawn the storm is gone.",
	"long":           strings.Repeat("Solar panels turn sunlight into electricity using silicon cells, and the power flows into batteries for the night. ", 60),
	"no punctuation": "a cat chasing a red laser dot across a wooden kitchen floor while a dog watches",
}

func TestNewPlanFitsDuration(t *testing.T) {
	for name, prompt := range planPrompts {
		for _, d := range []int{5, 7, 30, 300} {
			plan, err := NewPlan(prompt, d, PlanOptions{})
			if err != nil {
				t.Fatalf("%s/%ds: %v", name, d, err)
			}
			checkPlan(t, name, plan, d)
			again, _ := NewPlan(prompt, d, PlanOptions{})
			if !reflect.DeepEqual(plan, again) {
				t.Errorf("%s/%ds: plan is not deterministic", name, d)
			}
		}
	}
}

// checkPlan asserts the invariants every plan keeps.
func checkPlan(t *testing.T, name string, plan Plan, d int) {
	t.Helper()
	if plan.DurationSeconds != d || len(plan.Scenes) == 0 || plan.Title == "" {
		t.Fatalf("%s/%ds: bad plan %+v", name, d, plan)
	}
	sum, words := 0, 0
	for i, sc := range plan.Scenes {
		if sc.Index != i || sc.StartSeconds != sum {
			t.Errorf("%s/%ds: scene %d has index %d start %d, want start %d", name, d, i, sc.Index, sc.StartSeconds, sum)
		}
		if sc.DurationSeconds < planMinScene || len(sc.Lines) == 0 || sc.Visual == "" {
			t.Errorf("%s/%ds: scene %d: %+v", name, d, i, sc)
		}
		if sp := sc.SpeechSeconds(plan.WordsPerMinute); sp > float64(sc.DurationSeconds) {
			t.Errorf("%s/%ds: scene %d speaks %.1fs in %ds", name, d, i, sp, sc.DurationSeconds)
		}
		for _, l := range sc.Lines {
			if strings.TrimSpace(l) == "" || !isSentenceEnd([]rune(l)[len([]rune(l))-1]) && !strings.HasSuffix(l, ",") {
				t.Errorf("%s/%ds: bad line %q", name, d, l)
			}
		}
		sum += sc.DurationSeconds
		words += sc.Words()
	}
	if sum != d {
		t.Errorf("%s/%ds: scene durations add up to %d", name, d, sum)
	}
	if budget := float64(d) * float64(plan.WordsPerMinute) / 60; float64(words) > budget {
		t.Errorf("%s/%ds: %d words cannot be spoken in %ds at %d wpm", name, d, words, d, plan.WordsPerMinute)
	}
	if d >= 30 && words < int(float64(d)*float64(plan.WordsPerMinute)/60*0.5) {
		t.Errorf("%s/%ds: only %d words of narration", name, d, words)
	}
}

func TestNewPlanKeepsThePromptFirst(t *testing.T) {
	plan, err := NewPlan(planPrompts["medium"], 60, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"A tour of an old lighthouse on a stormy coast.",
		"The keeper climbs the stairs at dusk, carrying a lantern.",
		"Waves crash against the rocks below!",
		"Ships far out at sea look for the light?",
		"At dawn the storm is gone.",
	}
	if got := plan.Lines()[:len(want)]; !reflect.DeepEqual(got, want) {
		t.Errorf("lines start %q, want %q", got, want)
	}
	if plan.Title != "A tour of an old lighthouse" {
		t.Errorf("title %q", plan.Title)
	}
	if !strings.HasPrefix(plan.Scenes[0].Visual, "Wide establishing shot of a tour of an old lighthouse") {
		t.Errorf("first visual %q", plan.Scenes[0].Visual)
	}
}

func TestNewPlanCutsALongPrompt(t *testing.T) {
	plan, err := NewPlan(planPrompts["long"], 5, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := plan.Lines()
	if len(plan.Scenes) != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "Solar panels turn sunlight") {
		t.Errorf("plan of a long prompt in 5s: %+v", plan)
	}
}

func TestNewPlanWordsPerMinute(t *testing.T) {
	slow, _ := NewPlan(planPrompts["short"], 30, PlanOptions{WordsPerMinute: 100})
	fast, _ := NewPlan(planPrompts["short"], 30, PlanOptions{WordsPerMinute: 200})
	checkPlan(t, "slow", slow, 30)
	checkPlan(t, "fast", fast, 30)
	if len(strings.Fields(strings.Join(fast.Lines(), " "))) <= len(strings.Fields(strings.Join(slow.Lines(), " "))) {
		t.Error("a faster speaking rate did not give more words")
	}
}

func TestNewPlanRejects(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		d, wpm int
	}{
		{"ok", 4, 0}, {"ok", 301, 0}, {"   ", 10, 0}, {"... !!", 10, 0}, {"ok", 10, 20},
	} {
		if _, err := NewPlan(tc.prompt, tc.d, PlanOptions{WordsPerMinute: tc.wpm}); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("NewPlan(%q, %d, %d): %v, want ErrInvalidRequest", tc.prompt, tc.d, tc.wpm, err)
		}
	}
}

func TestSplitSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"hello world", []string{"Hello world."}},
		{"One. Two! Three? Four…", []string{"One.", "Two!", "Three?", "Four…"}},
		{"Pi is 3.14 today. ok", []string{"Pi is 3.14 today.", "Ok."}},
		{"first line\nsecond line", []string{"First line.", "Second line."}},
		{"Wait... what?!", []string{"Wait...", "What?!"}},
		{"— . —", nil},
	} {
		if got := splitSentences(normalizeText(tc.in)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitSentences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSplitLongAndCut(t *testing.T) {
	long := "one two three four five six, seven eight nine ten eleven twelve"
	if got := splitLong(long, 8); !reflect.DeepEqual(got, []string{"one two three four five six,", "seven eight nine ten eleven twelve"}) {
		t.Errorf("splitLong = %q", got)
	}
	if got := cutWords("the keeper climbs the stairs and the", 7); got != "the keeper climbs the stairs." {
		t.Errorf("cutWords = %q", got)
	}
	if got := keywords("The brave astronauts walked slowly across the dusty moon", 3); !reflect.DeepEqual(got, []string{"astronauts", "brave", "dusty"}) {
		t.Errorf("keywords = %q", got)
	}
}

func TestPlanDropsTheRequestPreamble(t *testing.T) {
	plan, err := NewPlan("Create a short video about how volcanoes form. Lava cools into new rock.", 10, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Lines()[0]; got != "How volcanoes form." {
		t.Errorf("first line %q", got)
	}
	if plan.Title != "How volcanoes form" {
		t.Errorf("title %q", plan.Title)
	}
	plan, _ = NewPlan("Explain how honeybees make honey and why hives need a queen.", 5, PlanOptions{})
	if plan.Title != "How honeybees make honey" || plan.Lines()[0] != "Explain how honeybees make honey." {
		t.Errorf("title %q, lines %q", plan.Title, plan.Lines())
	}
}
