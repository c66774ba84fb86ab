package pipeline

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of an auto video's length, from the API contract.
const (
	MinAutoSeconds = 5
	MaxAutoSeconds = 300
)

// DefaultWordsPerMinute is the speaking rate narration is sized for. The
// tts stage speaks a little faster (SpeechRate), so planned lines fit.
const DefaultWordsPerMinute = 150

const (
	planFill         = 0.8 // share of the duration the narration may fill
	planSceneSeconds = 8   // target length of one scene
	planMinScene     = 2   // shortest scene, seconds
	planMaxLineWords = 24  // longer sentences are cut into lines at commas
	planMinCut       = 4   // fewest words worth keeping of a cut sentence
)

// PlanOptions tunes NewPlan.
type PlanOptions struct {
	// WordsPerMinute is the speaking rate narration is sized for
	// (0 = DefaultWordsPerMinute).
	WordsPerMinute int
}

// Plan is the script of an auto video: narration lines grouped into scenes
// whose durations add up to exactly DurationSeconds. It is plain data (JSON)
// so it can travel between the plan, tts, scene and composite tasks.
type Plan struct {
	Prompt          string  `json:"prompt"`
	Title           string  `json:"title"`
	DurationSeconds int     `json:"duration_seconds"`
	WordsPerMinute  int     `json:"words_per_minute"`
	Scenes          []Scene `json:"scenes"`
	// Writer names the language model that wrote the plan ("openai-chat
	// MODEL"); empty for the deterministic writer.
	Writer string `json:"writer,omitempty"`
}

// Planner writes the script of an auto video of durationSeconds from the
// customer's prompt (the plan stage). DeterministicPlanner is the default;
// ChatPlanner asks a language model.
type Planner interface {
	Plan(ctx context.Context, prompt string, durationSeconds int) (Plan, error)
}

// DeterministicPlanner is NewPlan behind the Planner interface.
type DeterministicPlanner struct {
	Options PlanOptions
}

var _ Planner = DeterministicPlanner{}

// Plan implements Planner. It does not block, so ctx is only checked.
func (d DeterministicPlanner) Plan(ctx context.Context, prompt string, durationSeconds int) (Plan, error) {
	if err := ctx.Err(); err != nil {
		return Plan{}, err
	}
	return NewPlan(prompt, durationSeconds, d.Options)
}

// Scene is one shot of an auto video.
type Scene struct {
	Index           int      `json:"index"`
	StartSeconds    int      `json:"start_seconds"`
	DurationSeconds int      `json:"duration_seconds"`
	Visual          string   `json:"visual"` // prompt for the scene's render
	Lines           []string `json:"lines"`  // narration, one sentence (or part) each
}

// Words counts the narration words of the scene.
func (s Scene) Words() int {
	n := 0
	for _, l := range s.Lines {
		n += len(strings.Fields(l))
	}
	return n
}

// SpeechSeconds estimates how long the scene's narration takes at wpm.
func (s Scene) SpeechSeconds(wpm int) float64 {
	return float64(s.Words()) * 60 / float64(wpm)
}

// Lines returns every narration line of the plan in order.
func (p Plan) Lines() []string {
	var out []string
	for _, s := range p.Scenes {
		out = append(out, s.Lines...)
	}
	return out
}

// NewPlan writes the script of an auto video of durationSeconds (5–300)
// from prompt. It is deterministic: the same prompt, duration and options
// always give the same plan. See the package documentation for how it works
// and what it cannot do.
func NewPlan(prompt string, durationSeconds int, opts PlanOptions) (Plan, error) {
	if durationSeconds < MinAutoSeconds || durationSeconds > MaxAutoSeconds {
		return Plan{}, invalidf("duration_seconds %d: allowed %d..%d", durationSeconds, MinAutoSeconds, MaxAutoSeconds)
	}
	wpm := opts.WordsPerMinute
	if wpm == 0 {
		wpm = DefaultWordsPerMinute
	}
	if wpm < 60 || wpm > 400 {
		return Plan{}, invalidf("words per minute %d: allowed 60..400", wpm)
	}
	text := normalizeText(prompt)
	sentences := splitSentences(text)
	if len(sentences) == 0 {
		return Plan{}, invalidf("prompt has no words to narrate")
	}
	sentences[0] = stripPreamble(sentences[0])
	h := hashString(text)
	budget := int(float64(durationSeconds) * float64(wpm) / 60 * planFill)
	lines := expandLines(fitLines(sentences, budget), sentences, budget, h)

	groups := groupLines(lines, sceneCount(durationSeconds, len(lines)))
	durs := sceneDurations(groups, durationSeconds, wpm)
	plan := Plan{
		Prompt:          text,
		Title:           titleOf(sentences[0]),
		DurationSeconds: durationSeconds,
		WordsPerMinute:  wpm,
	}
	start := 0
	for i, g := range groups {
		plan.Scenes = append(plan.Scenes, Scene{
			Index:           i,
			StartSeconds:    start,
			DurationSeconds: durs[i],
			Visual:          sceneVisual(i, g, plan.Title, h),
			Lines:           texts(g),
		})
		start += durs[i]
	}
	return plan, nil
}

// planLine is a narration line and what it is about (for the visual).
type planLine struct {
	text  string
	topic string
	words int
}

func newPlanLine(text, topic string) planLine {
	return planLine{text: text, topic: topic, words: len(strings.Fields(text))}
}

func texts(g []planLine) []string {
	out := make([]string, len(g))
	for i, l := range g {
		out[i] = l.text
	}
	return out
}

// fitLines keeps the prompt's sentences, in order, while they fit the word
// budget. The first line that does not fit is cut short when at least
// planMinCut words of budget are left (or it is the first line), and the
// rest of the prompt is dropped.
func fitLines(sentences []string, budget int) []planLine {
	var out []planLine
	used := 0
	for _, s := range sentences {
		for _, part := range splitLong(s, planMaxLineWords) {
			l := newPlanLine(part, part)
			if used+l.words <= budget {
				out = append(out, l)
				used += l.words
				continue
			}
			if left := budget - used; left >= planMinCut || len(out) == 0 {
				out = append(out, newPlanLine(cutWords(part, max(left, 1)), part))
			}
			return out
		}
	}
	return out
}

// cutWords shortens s to at most n words and ends it as a sentence. It cuts
// after the last comma, semicolon or colon, or else before the last joining
// word ("and", "which", …), that falls in the second half; failing both it
// drops trailing small words ("and", "of the").
func cutWords(s string, n int) string {
	w := strings.Fields(s)[:n]
	for i := len(w); i > n/2 && i > 1; i-- {
		if strings.ContainsAny(w[i-1][len(w[i-1])-1:], ",;:") {
			return endSentence(strings.Join(w[:i], " "))
		}
	}
	for i := len(w) - 1; i >= max(n/2, 2); i-- {
		if clauseWords[strings.ToLower(w[i])] {
			w = w[:i]
			break
		}
	}
	for len(w) > 1 && isSmallWord(w[len(w)-1]) {
		w = w[:len(w)-1]
	}
	return endSentence(strings.Join(w, " "))
}

// clauseWords start a new clause: a good place to cut a sentence.
var clauseWords = map[string]bool{"and": true, "but": true, "or": true, "because": true, "while": true,
	"which": true, "that": true, "when": true, "where": true, "so": true, "then": true, "with": true}

// sceneCount is how many scenes a video of d seconds with n lines gets:
// about one per planSceneSeconds, at least one line and planMinScene
// seconds each.
func sceneCount(d, n int) int {
	c := int(math.Ceil(float64(d) / planSceneSeconds))
	return max(1, min(c, n, d/planMinScene))
}

// groupLines cuts lines into n consecutive, non-empty groups of about the
// same number of words.
func groupLines(lines []planLine, n int) [][]planLine {
	total := 0
	for _, l := range lines {
		total += l.words
	}
	groups := make([][]planLine, 0, n)
	li, cum := 0, 0
	for k := 0; k < n; k++ {
		limit := float64(total*(k+1)) / float64(n)
		var g []planLine
		for li < len(lines) {
			leftScenes, leftLines := n-k-1, len(lines)-li
			if len(g) > 0 && (leftLines <= leftScenes || float64(cum)+float64(lines[li].words)/2 > limit) {
				break
			}
			g = append(g, lines[li])
			cum += lines[li].words
			li++
		}
		groups = append(groups, g)
	}
	return groups
}

// sceneDurations shares d whole seconds between the groups in proportion to
// their words (largest remainder), at least planMinScene each, then moves
// seconds from scenes with slack to any scene whose estimated speech would
// not fit.
func sceneDurations(groups [][]planLine, d, wpm int) []int {
	n := len(groups)
	words := make([]float64, n)
	total := 0.0
	for i, g := range groups {
		for _, l := range g {
			words[i] += float64(l.words)
		}
		words[i] = max(words[i], 1)
		total += words[i]
	}
	ideal := make([]float64, n)
	for i := range groups {
		ideal[i] = float64(d) * words[i] / total
	}
	durs := apportion(ideal, d)
	speech := func(i int) float64 { return words[i] * 60 / float64(wpm) }
	for range d { // each pass moves one second; d passes always suffice
		short, slack := -1, -1
		for i := range durs {
			if short < 0 && speech(i) > float64(durs[i]) {
				short = i
			}
			if durs[i] > planMinScene && float64(durs[i]-1) >= speech(i) &&
				(slack < 0 || float64(durs[i])-speech(i) > float64(durs[slack])-speech(slack)) {
				slack = i
			}
		}
		if short < 0 || slack < 0 {
			break
		}
		durs[short]++
		durs[slack]--
	}
	return durs
}

// apportion shares d whole seconds between scenes whose ideal (fractional)
// lengths add up to d: the whole part of each, at least planMinScene, then
// seconds added to the largest remainders or taken from the longest
// overshoots until they add up to d. d must be at least
// planMinScene*len(ideal).
func apportion(ideal []float64, d int) []int {
	durs := make([]int, len(ideal))
	sum := 0
	for i := range ideal {
		durs[i] = max(planMinScene, int(ideal[i]))
		sum += durs[i]
	}
	for sum != d {
		best := -1
		for i := range durs {
			if sum < d && (best < 0 || ideal[i]-float64(durs[i]) > ideal[best]-float64(durs[best])) {
				best = i
			}
			if sum > d && durs[i] > planMinScene && (best < 0 || float64(durs[i])-ideal[i] > float64(durs[best])-ideal[best]) {
				best = i
			}
		}
		if sum < d {
			durs[best]++
			sum++
		} else {
			durs[best]--
			sum--
		}
	}
	return durs
}

// sceneCameras are the shot types scene visuals rotate through.
var sceneCameras = []string{
	"Slow push-in", "Close-up", "Tracking shot", "Overhead view", "Low-angle shot", "Slow pan", "Medium shot",
}

// sceneVisual describes what scene i shows: a shot type, its subject and,
// when the subject does not already say it, what the video is about.
func sceneVisual(i int, g []planLine, title string, h uint64) string {
	camera := "Wide establishing shot"
	if i > 0 {
		camera = sceneCameras[(h+uint64(i))%uint64(len(sceneCameras))]
	}
	subject := strings.TrimRight(g[0].topic, ".!?… ")
	subject = lowerFirst(subject)
	if strings.HasPrefix(strings.ToLower(subject), strings.ToLower(title)) {
		return fmt.Sprintf("%s of %s", camera, subject)
	}
	return fmt.Sprintf("%s of %s, in a video about %s", camera, subject, title)
}

// titleOf is the first sentence without a request preamble or leading
// instruction ("Explain …"), cut to at most eight words where a clause ends.
func titleOf(sentence string) string {
	sentence = stripPreamble(sentence)
	if loc := instruction.FindStringIndex(sentence); loc != nil && loc[1] < len(sentence) {
		sentence = capitalize(sentence[loc[1]:])
	}
	if len(strings.Fields(sentence)) > 8 {
		sentence = cutWords(sentence, 8)
	}
	return strings.TrimRight(sentence, ".!?…,;: ")
}

// lowerFirst lower-cases the first letter of s unless its first word is "I"
// or looks like an acronym ("NASA", "TV").
func lowerFirst(s string) string {
	first := []rune(strings.Fields(s + " x")[0])
	if string(first) == "I" || len(first) > 1 && unicode.IsUpper(first[1]) {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}
