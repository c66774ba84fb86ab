package pipeline

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// DefaultVoice is the voice used when a request names none.
const DefaultVoice = "en-us"

// Voice is one espeak-ng voice the API offers (GET /v1/voices).
//
// IDs are stable: "<language>" (espeak-ng's language code, lower-cased) for
// a language's base voice (e.g. "en-us", "fr-fr", "yue")
// and "<language>+<variant>" for the same language spoken with one of the
// classic espeak-ng variants f1–f5 (female) and m1–m8 (male), e.g.
// "en-us+f3". Where espeak-ng has two voices for one language code, the
// second takes the lower-cased name of its voice file
// ("yue-latn-jyutping"). The list comes from the installed espeak-ng, so a
// newer espeak-ng may add ids but does not rename existing ones. Synthesize
// hands espeak-ng the voice file ("gmw/en-US+f3"), which it accepts for
// every voice, where some language codes are not accepted as -v.
type Voice struct {
	ID       string `json:"id"`
	Name     string `json:"name"`     // e.g. "English (America), Female 3"
	Language string `json:"language"` // espeak-ng language code, e.g. "en-us"
	Gender   string `json:"gender"`   // "male" or "female"
}

// voiceVariants are the espeak-ng variants combined with every language, in
// list order. Only those installed are offered.
var voiceVariants = []string{"f1", "f2", "f3", "f4", "f5", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"}

// ListVoices returns every voice: each espeak-ng language's base voice
// followed by its variants, languages in espeak-ng's order (alphabetical).
// The result is cached for the life of t; callers may modify the slice.
func (t *Tools) ListVoices(ctx context.Context) ([]Voice, error) {
	t.voicesMu.Lock()
	defer t.voicesMu.Unlock()
	if err := t.loadVoicesLocked(ctx); err != nil {
		return nil, err
	}
	return append([]Voice(nil), t.voices...), nil
}

// loadVoicesLocked fills the voice cache on first use; the caller holds voicesMu.
func (t *Tools) loadVoicesLocked(ctx context.Context) error {
	if t.voices == nil {
		langs, err := t.exec().Run(ctx, Command{Name: t.espeakBin(), Args: []string{"--voices"}})
		if err != nil {
			return fmt.Errorf("list voices: %w", err)
		}
		variants, err := t.exec().Run(ctx, Command{Name: t.espeakBin(), Args: []string{"--voices=variant"}})
		if err != nil {
			return fmt.Errorf("list voice variants: %w", err)
		}
		t.voices, t.voiceArgs = buildVoices(parseVoiceTable(string(langs)), parseVoiceTable(string(variants)))
	}
	return nil
}

// voiceRow is one row of `espeak-ng --voices` output.
type voiceRow struct {
	language, gender, name, file string
}

// parseVoiceTable parses the table espeak-ng prints for --voices:
// "Pty Language Age/Gender VoiceName File Other Languages".
func parseVoiceTable(out string) []voiceRow {
	var rows []voiceRow
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] == "Pty" {
			continue
		}
		gender := ""
		if _, g, ok := strings.Cut(f[2], "/"); ok {
			switch g {
			case "M":
				gender = "male"
			case "F":
				gender = "female"
			}
		}
		rows = append(rows, voiceRow{language: strings.ToLower(f[1]), gender: gender, name: strings.ReplaceAll(f[3], "_", " "), file: f[4]})
	}
	return rows
}

// buildVoices combines languages with the installed voiceVariants. It also
// returns, for each id, the -v argument that selects it.
func buildVoices(langs, variants []voiceRow) ([]Voice, map[string]string) {
	installed := map[string]voiceRow{}
	for _, v := range variants {
		installed[path.Base(v.file)] = v
	}
	args := map[string]string{}
	var out []Voice
	for _, l := range langs {
		id := l.language
		if args[id] != "" {
			id = strings.ToLower(path.Base(l.file))
		}
		if args[id] != "" || !validVoiceID(id) || strings.HasPrefix(l.file, "-") {
			continue
		}
		args[id] = l.file
		out = append(out, Voice{ID: id, Name: l.name, Language: l.language, Gender: orDefault(l.gender, "male")})
		for _, name := range voiceVariants {
			v, ok := installed[name]
			if !ok {
				continue
			}
			gender := orDefault(v.gender, "male")
			label := "Male " + name[1:]
			if name[0] == 'f' {
				gender, label = "female", "Female "+name[1:]
			}
			out = append(out, Voice{ID: id + "+" + name, Name: l.name + ", " + label, Language: l.language, Gender: gender})
			args[id+"+"+name] = l.file + "+" + name
		}
	}
	return out, args
}

// validVoiceID reports whether id is safe to hand to espeak-ng as -v.
func validVoiceID(id string) bool {
	if id == "" || id[0] == '-' || id[0] == '+' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '+' || r == '_') {
			return false
		}
	}
	return true
}
