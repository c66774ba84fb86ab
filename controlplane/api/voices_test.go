package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

// espeakLike is a catalogue shaped like espeak-ng's: base voices and their
// variants over a few languages, including two that share a prefix without
// sharing a subtag (ka, kaa).
func espeakLike() []fsm.Voice {
	langs := []struct{ code, name string }{
		{"en-gb", "English (Great Britain)"}, {"en-us", "English (America)"}, {"en-029", "English (Caribbean)"},
		{"fr-fr", "French (France)"}, {"ka", "Georgian"}, {"kaa", "Karakalpak"}, {"eu", "Basque"}, {"yue", "Chinese (Cantonese)"},
	}
	var out []fsm.Voice
	for _, l := range langs {
		out = append(out, fsm.Voice{ID: l.code, Name: l.name, Language: l.code, Gender: "male"})
		for i := 1; i <= 3; i++ {
			out = append(out, fsm.Voice{ID: fmt.Sprintf("%s+f%d", l.code, i), Name: fmt.Sprintf("%s, Female %d", l.name, i), Language: l.code, Gender: "female"})
			out = append(out, fsm.Voice{ID: fmt.Sprintf("%s+m%d", l.code, i), Name: fmt.Sprintf("%s, Male %d", l.name, i), Language: l.code, Gender: "male"})
		}
	}
	return out // 8 languages × 7 = 56
}

// registerVoices registers a CPU node offering voices, through Raft.
func (e *env) registerVoices(name string, voices []fsm.Voice) {
	e.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.node.Apply(ctx, &fsm.RegisterNode{NodeID: "node_" + name, Name: name, CredHash: [32]byte{byte(len(name))},
		Node: scheduler.Node{CPUSlots: 1, Tools: []string{"espeak-ng"}}, Voices: voices, Now: time.Now().UnixNano()}); err != nil {
		e.tb.Fatalf("register %s: %v", name, err)
	}
}

type voiceList struct {
	Object string `json:"object"`
	Data   []struct {
		ID       string `json:"id"`
		Object   string `json:"object"`
		Name     string `json:"name"`
		Language string `json:"language"`
		Gender   string `json:"gender"`
	} `json:"data"`
	Count   int  `json:"count"`
	Total   int  `json:"total"`
	HasMore bool `json:"has_more"`
}

func (l voiceList) ids() []string {
	out := []string{}
	for _, v := range l.Data {
		out = append(out, v.ID)
	}
	return out
}

func (e *env) voices(key, query string) voiceList {
	e.tb.Helper()
	r := e.do(http.MethodGet, "/v1/voices?"+query, key, "").wantStatus(e.tb, http.StatusOK)
	var l voiceList
	if err := json.Unmarshal(r.Body, &l); err != nil {
		e.tb.Fatal(err)
	}
	if l.Object != "list" || l.Count != len(l.Data) {
		e.tb.Fatalf("GET /v1/voices?%s: %s", query, r.Body)
	}
	return l
}

func TestListVoicesEmptyWithoutNodes(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	r := e.do(http.MethodGet, "/v1/voices", key, "").wantStatus(t, http.StatusOK)
	if got := strings.TrimSpace(string(r.Body)); got != `{"object":"list","data":[],"count":0,"total":0,"has_more":false}` {
		t.Fatalf("empty catalogue: %s", got)
	}
	if r := e.do(http.MethodGet, "/v1/voices", "", ""); r.Status != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", r.Status)
	}
}

func TestListVoicesFilters(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	all := espeakLike()
	e.registerVoices("tts-1", all)

	l := e.voices(key, "")
	if l.Total != len(all) || l.Count != len(all) || l.HasMore {
		t.Fatalf("all: total %d count %d has_more %v", l.Total, l.Count, l.HasMore)
	}
	if !slices.IsSorted(l.ids()) {
		t.Fatalf("not sorted by id: %v", l.ids())
	}
	if v := l.Data[0]; v.ID != "en-029" || v.Object != "voice" || v.Name != "English (Caribbean)" || v.Language != "en-029" || v.Gender != "male" {
		t.Fatalf("first voice: %+v", v)
	}

	for _, c := range []struct {
		query string
		total int
		first string
	}{
		{"language=en", 21, "en-029"},
		{"language=EN-us", 7, "en-us"},
		{"language=en_US", 7, "en-us"},
		{"language=ka", 7, "ka"}, // not kaa: the prefix ends at a subtag
		{"language=e", 0, ""},    // not en-*, not eu
		{"language=en-u", 0, ""}, // idem
		{"gender=female", 24, "en-029+f1"},
		{"gender=male&language=fr", 4, "fr-fr"},
		{"search=CARIB", 7, "en-029"},    // name, any case
		{"search=%2Bf2", 8, "en-029+f2"}, // id: "+f2"
		{"search=female%202&language=yue", 1, "yue+f2"},
		{"search=", len(all), "en-029"},
		{"search=nothing-like-it", 0, ""},
	} {
		l := e.voices(key, c.query)
		first := ""
		if len(l.Data) > 0 {
			first = l.Data[0].ID
		}
		if l.Total != c.total || l.Count != c.total || first != c.first {
			t.Errorf("%s: total %d count %d first %q; want %d, %q (%v)", c.query, l.Total, l.Count, first, c.total, c.first, l.ids())
		}
		for _, v := range l.Data {
			if strings.Contains(c.query, "gender=female") && v.Gender != "female" {
				t.Errorf("%s: %+v", c.query, v)
			}
		}
	}
}

func TestListVoicesLimitAndPages(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	// 700 voices: more than the largest page.
	var many []fsm.Voice
	for i := range 100 {
		lang := fmt.Sprintf("l%03d", i)
		for j := range 7 {
			many = append(many, fsm.Voice{ID: fmt.Sprintf("%s+v%d", lang, j), Name: "Voice " + lang, Language: lang, Gender: "female"})
		}
	}
	e.registerVoices("tts-1", many)

	if l := e.voices(key, ""); l.Count != 100 || l.Total != 700 || !l.HasMore {
		t.Fatalf("default page: count %d total %d has_more %v", l.Count, l.Total, l.HasMore)
	}
	if l := e.voices(key, "limit=500"); l.Count != 500 || !l.HasMore {
		t.Fatalf("limit=500: count %d has_more %v", l.Count, l.HasMore)
	}
	// Paging with starting_after visits every voice once, in order.
	var seen []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		l := e.voices(key, "limit=300&starting_after="+url.QueryEscape(after))
		if l.Total != 700 {
			t.Fatalf("total %d on a later page", l.Total)
		}
		seen = append(seen, l.ids()...)
		if !l.HasMore {
			break
		}
		after = l.Data[len(l.Data)-1].ID
	}
	if len(seen) != 700 || !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != 700 {
		t.Fatalf("paging saw %d voices", len(seen))
	}
	if l := e.voices(key, "limit=1&language=l050"); l.Count != 1 || l.Total != 7 || !l.HasMore || l.Data[0].ID != "l050+v0" {
		t.Fatalf("limit with a filter: %+v", l)
	}
}

func TestListVoicesRefusesBadQueries(t *testing.T) {
	e := newEnv(t)
	_, key := e.account("pro", 0)
	e.registerVoices("tts-1", espeakLike())
	for _, c := range []struct{ query, field, says string }{
		{"limit=0", "limit", "1 to 500"},
		{"limit=501", "limit", "1 to 500"},
		{"limit=ten", "limit", "1 to 500"},
		{"limit=", "limit", "1 to 500"},
		{"gender=other", "gender", "male or female"},
		{"gender=Female", "gender", "male or female"},
		{"gender=", "gender", "male or female"},
		{"language=", "language", "language code"},
		{"language=en%20us", "language", "language code"},
		{"language=-en", "language", "language code"},
		{"language=" + strings.Repeat("a", 36), "language", "language code"},
		{"search=" + strings.Repeat("a", 101), "search", "longer than 100"},
		{"colour=red", "colour", `"colour"`},
		{"zeta=1&alpha=2&limit=5", "alpha", `"alpha", "zeta"`},
		{"gender=male&gender=female", "gender", "2 times"},
	} {
		r := e.do(http.MethodGet, "/v1/voices?"+c.query, key, "").wantStatus(t, http.StatusBadRequest)
		er := r.errorOf(t)
		d, _ := er["details"].(map[string]any)
		if r.code(t) != "invalid_request" || d["field"] != c.field || !strings.Contains(er["message"].(string), c.says) {
			t.Errorf("%s: %s", c.query, r.Body)
		}
	}
}

func TestCreateVideoChecksVoiceID(t *testing.T) {
	e := newEnv(t)
	acct, key := e.account("pro", 1000)
	auto := func(voice string) response {
		b, _ := json.Marshal(map[string]any{"mode": "auto", "prompt": "a harbour at night", "duration_seconds": 5, "voice_id": voice})
		return e.create(key, "", string(b))
	}
	// No node has registered voices: any id is taken (the render fails later
	// where the voice is missing).
	auto("no-such-voice").wantStatus(t, http.StatusCreated)

	e.registerVoices("tts-1", espeakLike())
	auto("en-us+f2").wantStatus(t, http.StatusCreated)
	auto("kaa").wantStatus(t, http.StatusCreated)
	// The default voice (no voice_id) needs no catalogue entry.
	e.create(key, "", `{"mode":"auto","prompt":"x","duration_seconds":5}`).wantStatus(t, http.StatusCreated)

	for _, c := range []struct {
		voice       string
		suggestions []string
	}{
		{"no-such-voice", nil},
		{"EN-US", []string{"en-us", "en-us+f1", "en-us+f2", "en-us+f3", "en-us+m1", "en-us+m2", "en-us+m3"}},
		{"en-us+f9", []string{"en-us", "en-us+f1", "en-us+f2", "en-us+f3", "en-us+m1", "en-us+m2", "en-us+m3"}},
		{"en", []string{"en-029", "en-gb", "en-us", "en-029+f1", "en-029+f2", "en-029+f3", "en-029+m1", "en-029+m2", "en-029+m3", "en-gb+f1"}},
	} {
		before := e.balance(acct)
		r := auto(c.voice).wantStatus(t, http.StatusBadRequest)
		er := r.errorOf(t)
		d, _ := er["details"].(map[string]any)
		if r.code(t) != "invalid_request" || d["field"] != "voice_id" || !strings.Contains(d["hint"].(string), "GET /v1/voices") ||
			!strings.Contains(er["message"].(string), c.voice) {
			t.Errorf("voice %q: %s", c.voice, r.Body)
		}
		var got []string
		if s, ok := d["suggestions"].([]any); ok {
			for _, x := range s {
				got = append(got, x.(string))
			}
		}
		if !slices.Equal(got, c.suggestions) {
			t.Errorf("voice %q: suggestions %q, want %q", c.voice, got, c.suggestions)
		}
		if after := e.balance(acct); after != before {
			t.Errorf("voice %q: refused request charged %d credits", c.voice, before-after)
		}
	}
	// A manual video takes no voice_id at all, catalogue or not.
	e.create(key, "", `{"mode":"manual","prompt":"x","voice_id":"en-us"}`).wantStatus(t, http.StatusBadRequest)
}
