package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// The voice catalogue (GET /v1/voices). The control plane has no espeak-ng of
// its own: each agent registers the voices its espeak-ng offers, and the
// catalogue is their union over the registered nodes (fsm.FSM.Voices). Until a
// node with espeak-ng registers it is empty, and POST /v1/videos then accepts
// any well-formed voice_id (a render task on a node without that voice fails
// the video with espeak-ng's message); once it holds voices, a voice_id
// outside it is refused with 400.

// Limits of GET /v1/voices.
const (
	defaultVoiceLimit = 100
	maxVoiceLimit     = 500
	maxVoiceSearch    = 100
	maxVoiceLanguage  = 35
	maxVoiceHints     = 10
)

var (
	voiceQueryParams = []string{"language", "gender", "search", "limit", "starting_after"}
	voiceGenders     = []string{"male", "female"}
)

type voiceJSON struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Name     string `json:"name"`
	Language string `json:"language"`
	Gender   string `json:"gender"`
}

func voiceView(v fsm.Voice) voiceJSON {
	return voiceJSON{ID: v.ID, Object: "voice", Name: v.Name, Language: v.Language, Gender: v.Gender}
}

// voiceFilter is a parsed GET /v1/voices query.
type voiceFilter struct {
	language      string // lower case, '_' read as '-'
	gender        string
	search        string // lower case
	limit         int
	startingAfter string
}

func (f voiceFilter) match(v fsm.Voice) bool {
	if f.language != "" && v.Language != f.language && !strings.HasPrefix(v.Language, f.language+"-") {
		return false
	}
	if f.gender != "" && v.Gender != f.gender {
		return false
	}
	return f.search == "" || strings.Contains(strings.ToLower(v.ID), f.search) || strings.Contains(strings.ToLower(v.Name), f.search)
}

// parseVoiceQuery validates the query of GET /v1/voices: only the known
// parameters, each at most once.
func parseVoiceQuery(r *http.Request) (voiceFilter, *apierr.Error) {
	q := r.URL.Query()
	if e := checkQuery(q, voiceQueryParams); e != nil {
		return voiceFilter{}, e
	}
	f := voiceFilter{
		language:      strings.ReplaceAll(strings.ToLower(q.Get("language")), "_", "-"),
		gender:        q.Get("gender"),
		search:        strings.ToLower(q.Get("search")),
		limit:         defaultVoiceLimit,
		startingAfter: q.Get("starting_after"),
	}
	if q.Has("language") && !validLanguageQuery(f.language) {
		return voiceFilter{}, apierr.Invalid("language", fmt.Sprintf(
			"language %q is not a language code: give 1 to %d letters, digits and '-', such as en or en-us", q.Get("language"), maxVoiceLanguage)).
			With("max_length", maxVoiceLanguage)
	}
	if q.Has("gender") && !slices.Contains(voiceGenders, f.gender) {
		return voiceFilter{}, apierr.Invalid("gender", fmt.Sprintf("gender %q is not valid: use male or female", f.gender)).
			With("allowed", slices.Clone(voiceGenders))
	}
	if len(q.Get("search")) > maxVoiceSearch {
		return voiceFilter{}, apierr.Invalid("search", fmt.Sprintf("search is longer than %d characters", maxVoiceSearch)).
			With("max_length", maxVoiceSearch)
	}
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxVoiceLimit {
			return voiceFilter{}, apierr.Invalid("limit", fmt.Sprintf("limit must be an integer from 1 to %d", maxVoiceLimit)).
				With("minimum", 1).With("maximum", maxVoiceLimit)
		}
		f.limit = n
	}
	return f, nil
}

// validLanguageQuery: letters, digits and inner '-' (already lower case).
func validLanguageQuery(s string) bool {
	if s == "" || len(s) > maxVoiceLanguage || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// listVoices serves GET /v1/voices: the catalogue sorted by id, filtered, one
// page of at most limit voices; starting_after (a voice id, an extension of
// the contract) continues after that id. The cursor need not match the
// filters, as a video cursor need not match the status filter, but it must
// be a voice: an id that never was one is a client's mistake, answered 400
// as the other lists answer it rather than with a page that looks like the end.
func (a *API) listVoices(w http.ResponseWriter, r *http.Request) {
	f, e := parseVoiceQuery(r)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	if f.startingAfter != "" {
		if _, ok := a.fsm.Voice(f.startingAfter); !ok {
			apierr.Write(w, r, apierr.Invalid("starting_after", fmt.Sprintf("starting_after %q is not a voice of this farm; give the id of the last voice of the previous page", f.startingAfter)))
			return
		}
	}
	out := listJSON[voiceJSON]{Object: "list", Data: []voiceJSON{}}
	for _, v := range a.fsm.Voices() {
		if !f.match(v) {
			continue
		}
		out.Total++
		switch {
		case f.startingAfter != "" && v.ID <= f.startingAfter:
		case len(out.Data) < f.limit:
			out.Data = append(out.Data, voiceView(v))
		default:
			out.HasMore = true
		}
	}
	out.Count = len(out.Data)
	apierr.WriteJSON(w, http.StatusOK, out)
}

// checkVoice refuses a voice_id the farm's catalogue lacks. An empty id (the
// default voice) and any id while the catalogue is empty (no node with
// espeak-ng has registered yet) pass.
func (a *API) checkVoice(id string) *apierr.Error {
	if id == "" || a.fsm.VoiceCount() == 0 {
		return nil
	}
	if _, ok := a.fsm.Voice(id); ok {
		return nil
	}
	e := apierr.Invalid("voice_id", fmt.Sprintf("voice_id %q is not a voice of this farm; list the voices with GET /v1/voices", id)).
		With("hint", "GET /v1/voices lists the voice ids; filter it with language, gender and search")
	if s := voiceSuggestions(a.fsm.Voices(), id); len(s) > 0 {
		e = e.With("suggestions", s)
	}
	return e
}

// voiceSuggestions returns up to maxVoiceHints ids of catalogue voices that
// look like what id meant: those of the language named by id's part before
// '+' (case-insensitive, '_' read as '-'), base voices before variants.
func voiceSuggestions(all []fsm.Voice, id string) []string {
	base, _, _ := strings.Cut(strings.ReplaceAll(strings.ToLower(id), "_", "-"), "+")
	if base == "" {
		return nil
	}
	f := voiceFilter{language: base}
	var bases, variants []string
	for _, v := range all {
		if !f.match(v) && v.ID != base {
			continue
		}
		if strings.Contains(v.ID, "+") {
			variants = append(variants, v.ID)
		} else {
			bases = append(bases, v.ID)
		}
	}
	out := append(bases, variants...)
	return out[:min(len(out), maxVoiceHints)]
}
