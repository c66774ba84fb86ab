package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
)

const voicesFixture = `Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  af              --/M      Afrikaans          gmw/af
 2  en-us           --/M      English_(America)  gmw/en-US            (en 3)
 5  fr-fr           --/M      French_(France)    roa/fr               (fr 5)
 5  yue             --/M      Chinese_(Cantonese) sit/yue             (zh-yue 5)(zh 8)
 5  yue             --/M      Chinese_(Cantonese,_latin_as_Jyutping) sit/yue-Latn-jyutping (zh-yue 5)(zh 8)
`

const variantsFixture = `Pty Language       Age/Gender VoiceName          File                 Other Languages
 5  variant         --/M      Adam               !v/adam
 5  variant         --/F      female3            !v/f3
 5  variant         70/F      female1            !v/f1
 5  variant         70/M      male1              !v/m1
`

func TestBuildVoices(t *testing.T) {
	voices, args := buildVoices(parseVoiceTable(voicesFixture), parseVoiceTable(variantsFixture))
	var ids []string
	for _, v := range voices {
		ids = append(ids, v.ID)
	}
	want := "af af+f1 af+f3 af+m1 en-us en-us+f1 en-us+f3 en-us+m1 fr-fr fr-fr+f1 fr-fr+f3 fr-fr+m1 " +
		"yue yue+f1 yue+f3 yue+m1 yue-latn-jyutping yue-latn-jyutping+f1 yue-latn-jyutping+f3 yue-latn-jyutping+m1"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("ids\n got %s\nwant %s", got, want)
	}
	if v := voices[6]; v != (Voice{ID: "en-us+f3", Name: "English (America), Female 3", Language: "en-us", Gender: "female"}) {
		t.Errorf("en-us+f3 = %+v", v)
	}
	if args["en-us+f3"] != "gmw/en-US+f3" || args["yue-latn-jyutping"] != "sit/yue-Latn-jyutping" || len(args) != len(voices) {
		t.Errorf("espeak arguments %v", args)
	}
	if v := voices[4]; v != (Voice{ID: "en-us", Name: "English (America)", Language: "en-us", Gender: "male"}) {
		t.Errorf("en-us = %+v", v)
	}
}

func TestListVoicesRunsEspeakOnceAndCaches(t *testing.T) {
	fake := &fakeExec{run: func(c Command) ([]byte, error) {
		if c.Args[0] == "--voices=variant" {
			return []byte(variantsFixture), nil
		}
		return []byte(voicesFixture), nil
	}}
	tools := &Tools{Exec: fake, EspeakNG: "/opt/espeak-ng"}
	for range 2 {
		if v, err := tools.ListVoices(context.Background()); err != nil || len(v) != 20 {
			t.Fatalf("ListVoices: %d voices, %v", len(v), err)
		}
	}
	if len(fake.cmds) != 2 || fake.cmds[0].Name != "/opt/espeak-ng" || fake.cmds[0].Args[0] != "--voices" || fake.cmds[1].Args[0] != "--voices=variant" {
		t.Errorf("commands %+v", fake.cmds)
	}
}

func TestListVoicesReal(t *testing.T) {
	requireTools(t, "espeak-ng")
	voices, err := testTools().ListVoices(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) <= 100 {
		t.Errorf("only %d voices; the API promises over 100", len(voices))
	}
	seen := map[string]bool{}
	genders := map[string]int{}
	for _, v := range voices {
		if seen[v.ID] || !validVoiceID(v.ID) || v.Name == "" || v.Language == "" {
			t.Errorf("bad or duplicate voice %+v", v)
		}
		seen[v.ID] = true
		genders[v.Gender]++
	}
	for _, id := range []string{"en-us", "en-us+f3", "fr-fr+m3", "de"} {
		if !seen[id] {
			t.Errorf("voice %s missing", id)
		}
	}
	if genders["female"] == 0 || genders["male"] == 0 || len(genders) != 2 {
		t.Errorf("genders %v", genders)
	}
}

func TestMissingToolIsErrToolMissing(t *testing.T) {
	tools := &Tools{EspeakNG: "vidfarm-no-such-espeak", FFprobe: "vidfarm-no-such-ffprobe"}
	if _, err := tools.ListVoices(context.Background()); !errors.Is(err, ErrToolMissing) || !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("ListVoices: %v", err)
	}
	if _, err := tools.Probe(context.Background(), "x.mp4"); !errors.Is(err, ErrToolMissing) {
		t.Errorf("Probe: %v", err)
	}
}
