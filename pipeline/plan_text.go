package pipeline

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalizeText turns control characters into spaces and collapses runs of
// spaces, keeping line breaks as sentence ends.
func normalizeText(s string) string {
	s = strings.ToValidUTF8(s, " ")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, l)
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// splitSentences cuts text at ., !, ?, … followed by a space or the end, and
// at line breaks. Each sentence starts with a capital and ends with
// punctuation; pieces with no letter or digit are dropped.
func splitSentences(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		if strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			out = append(out, endSentence(capitalize(s)))
		}
	}
	runes := []rune(text)
	for i, r := range runes {
		if r == '\n' {
			flush()
			continue
		}
		cur.WriteRune(r)
		if isSentenceEnd(r) && (i+1 == len(runes) || unicode.IsSpace(runes[i+1])) {
			flush()
		}
	}
	flush()
	return out
}

func isSentenceEnd(r rune) bool { return strings.ContainsRune(".!?…。！？", r) }

// endSentence makes s end with sentence punctuation.
func endSentence(s string) string {
	s = strings.TrimRight(s, " ,;:-")
	if r, _ := utf8.DecodeLastRuneInString(s); isSentenceEnd(r) {
		return s
	}
	return s + "."
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// splitLong cuts a sentence of more than max words into lines of at most
// max words, preferring to cut after a comma, semicolon or colon.
func splitLong(s string, maxWords int) []string {
	words := strings.Fields(s)
	var out []string
	for len(words) > maxWords {
		cut := maxWords
		for i := maxWords; i >= maxWords/2; i-- {
			if strings.ContainsAny(words[i-1][len(words[i-1])-1:], ",;:") {
				cut = i
				break
			}
		}
		out = append(out, strings.Join(words[:cut], " "))
		words = words[cut:]
	}
	return append(out, strings.Join(words, " "))
}

// expandTemplates are the stock sentences the writer adds around the
// prompt's key words when the prompt is too short for the duration.
var expandTemplates = []string{
	"Let's take a closer look at %s.",
	"Notice the details of %s.",
	"Here is what makes %s stand out.",
	"Think about %s for a moment.",
	"Now the focus turns to %s.",
	"Every part of this story touches on %s.",
	"Keep %s in mind as we go on.",
	"There is more to %s than meets the eye.",
	"Look at %s from a new angle.",
	"And that brings us back to %s.",
}

// expandLines adds template sentences about the prompt's key words until
// the narration fills most of the word budget. A prompt that already fills
// 70% of the budget is left alone.
func expandLines(lines []planLine, sentences []string, budget int, h uint64) []planLine {
	used := 0
	for _, l := range lines {
		used += l.words
	}
	if float64(used) >= 0.7*float64(budget) {
		return lines
	}
	topics := keywords(strings.Join(sentences, " "), 8)
	if len(topics) == 0 {
		w := strings.Fields(strings.TrimRight(sentences[0], ".!?…"))
		topics = []string{strings.Join(w[:min(len(w), 5)], " ")}
	}
	start := int(h % uint64(len(expandTemplates)))
	for i := 0; ; i++ {
		topic := topics[i%len(topics)]
		l := newPlanLine(fmt.Sprintf(expandTemplates[(start+i)%len(expandTemplates)], topic), topic)
		if used+l.words > budget {
			return lines
		}
		lines = append(lines, l)
		used += l.words
	}
}

// stopwords are common English words that are never key words.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`about above across after again against along also among another around because been before behind beside beyond onto upon toward towards
		being below between both came come could does doing down during each even every from further have
		having here into just like made make many more most much must never only other over same should
		show shows some such than that their them then there these they this those through under until
		very want were what when where which while will with within without would your yours video clip
		please create generate make makes explain explains tell need needs know knows take takes give gives
		keep keeps look looks find finds help helps seem seems feel feels become becomes goes`) {
		stopwords[w] = true
	}
}

// smallWords are joining words a cut sentence or a title should not end on.
var smallWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an the and or but of on in at to for with from by as is are was his her its their our my your this that") {
		smallWords[w] = true
	}
}

func isSmallWord(w string) bool {
	return smallWords[strings.ToLower(strings.Trim(w, ",;:"))]
}

// keywords returns up to n distinct key words of text, lower-cased: words of
// at least four letters that are not stopwords, preferring likely nouns
// (words not ending in -ing, -ed or -ly) and longer words, ties in order of
// appearance.
func keywords(text string, n int) []string {
	seen := map[string]bool{}
	var nouns, others []string
	for _, w := range strings.Fields(text) {
		w = strings.ToLower(strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		if utf8.RuneCountInString(w) < 4 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		if len(w) > 5 && (strings.HasSuffix(w, "ing") || strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ly")) {
			others = append(others, w)
		} else {
			nouns = append(nouns, w)
		}
	}
	byLength := func(ws []string) {
		sort.SliceStable(ws, func(i, j int) bool { return utf8.RuneCountInString(ws[i]) > utf8.RuneCountInString(ws[j]) })
	}
	byLength(nouns)
	byLength(others)
	out := append(nouns, others...)
	return out[:min(n, len(out))]
}

// hashString is the 64-bit FNV-1a hash of the strings, separated by NUL.
func hashString(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// requestPreamble matches the part of a prompt that asks for the video
// rather than saying what is in it: "Create a short video about …".
var requestPreamble = regexp.MustCompile(`(?i)^(please\s+)?(create|make|generate|produce|write|render)\s+(me\s+|us\s+)?(a|an)\s+(\w+\s+){0,2}?(video|clip|film|explainer|reel|short)\s+(about|on|of|showing|explaining|that\s+shows|that\s+explains)\s+`)

// instruction matches a leading instruction verb, dropped from titles.
var instruction = regexp.MustCompile(`(?i)^(please\s+)?(explain|describe|show|tell\s+(me|us)\s+about|teach\s+(me|us))\s+`)

// stripPreamble removes a request preamble from a sentence.
func stripPreamble(s string) string {
	if loc := requestPreamble.FindStringIndex(s); loc != nil && loc[1] < len(s) {
		return capitalize(s[loc[1]:])
	}
	return s
}
