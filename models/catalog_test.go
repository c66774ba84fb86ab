package models

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

func TestCatalogSizeAndIDs(t *testing.T) {
	all := All()
	if len(all) != 32 {
		t.Fatalf("catalog has %d models, want 32", len(all))
	}
	seen := map[string]bool{}
	families := map[string]bool{}
	for _, m := range all {
		if seen[m.ID] {
			t.Errorf("duplicate id %q", m.ID)
		}
		seen[m.ID] = true
		families[m.Family] = true
	}
	if len(families) < 10 {
		t.Errorf("only %d families, want a varied catalog", len(families))
	}

	ids := IDs()
	if !sort.StringsAreSorted(ids) {
		t.Errorf("IDs() not sorted: %v", ids)
	}
	if len(ids) != len(all) {
		t.Fatalf("IDs() has %d ids, All() %d models", len(ids), len(all))
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("IDs() has %q, All() does not", id)
		}
		m, ok := Get(id)
		if !ok || m.ID != id {
			t.Errorf("Get(%q) = %q, %v", id, m.ID, ok)
		}
	}
	for _, id := range []string{"", "kling", "KLING-2.1-MASTER", "kling-2.1-master ", "sora-3"} {
		if _, ok := Get(id); ok {
			t.Errorf("Get(%q) found a model", id)
		}
	}

	// All's order is stable.
	again := All()
	for i := range all {
		if all[i].ID != again[i].ID {
			t.Fatalf("All() order changed at %d: %q then %q", i, all[i].ID, again[i].ID)
		}
	}
}

var (
	idPattern    = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9.]+)+$`)
	knownAspects = []string{"16:9", "9:16", "1:1", "4:3", "3:4", "21:9"}
)

// TestCatalogConsistency checks every model on its own.
func TestCatalogConsistency(t *testing.T) {
	for _, m := range All() {
		t.Run(m.ID, func(t *testing.T) {
			checkModel(t, m)
		})
	}
}

func checkModel(t *testing.T, m Model) {
	t.Helper()
	if !idPattern.MatchString(m.ID) {
		t.Errorf("id %q is not lowercase family-version", m.ID)
	}
	if !strings.HasPrefix(m.ID, m.Family+"-") {
		t.Errorf("id %q does not start with family %q", m.ID, m.Family)
	}
	if m.Object != "model" {
		t.Errorf("object = %q", m.Object)
	}
	if m.Name == "" || m.Provider == "" || m.Family == "" || m.Description == "" {
		t.Errorf("empty name, provider, family or description: %+v", m)
	}

	// Operations: non-empty, valid, in canonical order, no duplicates.
	if len(m.Operations) == 0 {
		t.Error("no operations")
	}
	lastOp := -1
	for _, o := range m.Operations {
		i := slices.Index(Operations(), o)
		if i < 0 {
			t.Errorf("invalid operation %q", o)
		}
		if i <= lastOp {
			t.Errorf("operations not in canonical order or duplicated: %v", m.Operations)
		}
		lastOp = i
	}

	// Resolutions: known, lowest first; price and needs for each.
	if len(m.Resolutions) == 0 {
		t.Error("no resolutions")
	}
	lastRank := 0
	for i, r := range m.Resolutions {
		rank, ok := resolutionRank[r]
		if !ok {
			t.Errorf("unknown resolution %q", r)
		}
		if rank <= lastRank {
			t.Errorf("resolutions not ascending or duplicated: %v", m.Resolutions)
		}
		lastRank = rank

		c, ok := m.CreditsPerSecond[r]
		if !ok || c <= 0 {
			t.Errorf("credits_per_second[%s] = %d, %v", r, c, ok)
		}
		mem, ok := m.Requirements.GPUMemoryGB[r]
		if !ok || mem <= 0 || mem > 80 {
			t.Errorf("gpu_memory_gb[%s] = %d, %v; want 1..80", r, mem, ok)
		}
		gs, ok := m.Requirements.GPUSecondsPerOutputSecond[r]
		if !ok || gs <= 0 {
			t.Errorf("gpu_seconds_per_output_second[%s] = %v, %v", r, gs, ok)
		}
		if i > 0 {
			prev := m.Resolutions[i-1]
			if c <= m.CreditsPerSecond[prev] {
				t.Errorf("%s costs %d/s, not more than %s (%d/s)", r, c, prev, m.CreditsPerSecond[prev])
			}
			if mem < m.Requirements.GPUMemoryGB[prev] {
				t.Errorf("%s needs %d GB, less than %s", r, mem, prev)
			}
			if gs <= m.Requirements.GPUSecondsPerOutputSecond[prev] {
				t.Errorf("%s needs %v GPU-s/s, not more than %s", r, gs, prev)
			}
		}
	}
	for name, mp := range map[string]int{
		"credits_per_second":            len(m.CreditsPerSecond),
		"gpu_memory_gb":                 len(m.Requirements.GPUMemoryGB),
		"gpu_seconds_per_output_second": len(m.Requirements.GPUSecondsPerOutputSecond),
	} {
		if mp != len(m.Resolutions) {
			t.Errorf("%s has %d entries for %d resolutions", name, mp, len(m.Resolutions))
		}
	}
	if g := m.Requirements.GPUCount; g < 1 || g > 8 {
		t.Errorf("gpu_count = %d", g)
	}

	// Durations: positive, ascending.
	if len(m.Durations) == 0 {
		t.Error("no durations")
	}
	for i, d := range m.Durations {
		if d <= 0 || d > 60 || (i > 0 && d <= m.Durations[i-1]) {
			t.Errorf("durations not positive and ascending: %v", m.Durations)
		}
	}

	// Aspect ratios: known, no duplicates.
	if len(m.AspectRatios) == 0 {
		t.Error("no aspect ratios")
	}
	for i, a := range m.AspectRatios {
		if !slices.Contains(knownAspects, a) || slices.Index(m.AspectRatios, a) != i {
			t.Errorf("bad or duplicate aspect ratio %q in %v", a, m.AspectRatios)
		}
	}

	// Styles: never nil, no duplicates.
	if m.Styles == nil {
		t.Error("styles is nil")
	}
	for i, s := range m.Styles {
		if s == "" || slices.Index(m.Styles, s) != i {
			t.Errorf("bad or duplicate style %q in %v", s, m.Styles)
		}
	}

	// Defaults are members.
	if !slices.Contains(m.Resolutions, m.DefaultResolution) {
		t.Errorf("default resolution %q not in %v", m.DefaultResolution, m.Resolutions)
	}
	if !slices.Contains(m.Durations, m.DefaultDuration) {
		t.Errorf("default duration %d not in %v", m.DefaultDuration, m.Durations)
	}
	if !slices.Contains(m.AspectRatios, m.DefaultAspectRatio) {
		t.Errorf("default aspect ratio %q not in %v", m.DefaultAspectRatio, m.AspectRatios)
	}

	// max_images exactly for multiple_images.
	if multi := m.Supports(MultipleImages); multi != (m.MaxImages > 0) || m.MaxImages > 10 {
		t.Errorf("max_images = %d with multiple_images %v", m.MaxImages, multi)
	}

	checkParameters(t, m)
}

// paramFamilies lists, for advanced fields limited to some families, the
// families that may accept them.
var paramFamilies = map[string][]string{
	ParamMovementAmplitude: {"vidu"},
	ParamCfgScale:          {"kling"},
	ParamCameraFixed:       {"seedance"},
	ParamAutoFix:           {"veo", "wan", "hailuo", "hunyuan"},
}

// paramRequired lists advanced fields every model of a family must accept.
var paramRequired = map[string]string{
	"vidu":     ParamMovementAmplitude,
	"kling":    ParamCfgScale,
	"seedance": ParamCameraFixed,
}

var paramTypes = map[string]string{
	ParamNegativePrompt:    "string",
	ParamSeed:              "integer",
	ParamGenerateAudio:     "boolean",
	ParamStyle:             "string",
	ParamMovementAmplitude: "string",
	ParamCfgScale:          "number",
	ParamCameraFixed:       "boolean",
	ParamAutoFix:           "boolean",
}

func checkParameters(t *testing.T, m Model) {
	t.Helper()
	if m.Parameters == nil {
		t.Error("parameters is nil")
	}
	last := -1
	for _, p := range m.Parameters {
		i := slices.Index(ParamNames(), p.Name)
		if i < 0 {
			t.Errorf("unknown parameter %q", p.Name)
			continue
		}
		if i <= last {
			t.Errorf("parameters not in canonical order or duplicated: %v", m.ParamNames())
		}
		last = i
		if p.Type != paramTypes[p.Name] {
			t.Errorf("%s has type %q, want %q", p.Name, p.Type, paramTypes[p.Name])
		}
		if p.Description == "" {
			t.Errorf("%s has no description", p.Name)
		}
		if fams, ok := paramFamilies[p.Name]; ok && !slices.Contains(fams, m.Family) {
			t.Errorf("%s is accepted by family %s, only %v may", p.Name, m.Family, fams)
		}
		want := paramDef(p.Name)
		if p.Name == ParamStyle {
			want.Enum = m.Styles
		}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("parameter %s = %+v, want %+v", p.Name, p, want)
		}
	}
	_, hasStyle := m.Param(ParamStyle)
	if hasStyle != (len(m.Styles) > 0) {
		t.Errorf("style parameter %v with styles %v", hasStyle, m.Styles)
	}
	if name, ok := paramRequired[m.Family]; ok {
		if _, has := m.Param(name); !has {
			t.Errorf("%s model does not accept %s", m.Family, name)
		}
	}
}

func TestParamDefinitions(t *testing.T) {
	seed := paramDef(ParamSeed)
	if *seed.Min != 0 || *seed.Max != MaxSeed {
		t.Errorf("seed range %v..%v", *seed.Min, *seed.Max)
	}
	cfg := paramDef(ParamCfgScale)
	if *cfg.Min != 0 || *cfg.Max != 1 {
		t.Errorf("cfg_scale range %v..%v", *cfg.Min, *cfg.Max)
	}
	if np := paramDef(ParamNegativePrompt); np.MaxLength != 2500 {
		t.Errorf("negative_prompt max length %d", np.MaxLength)
	}
	if ma := paramDef(ParamMovementAmplitude); !slices.Equal(ma.Enum, []string{"auto", "small", "medium", "large"}) {
		t.Errorf("movement_amplitude enum %v", ma.Enum)
	}
	if len(paramTypes) != len(ParamNames()) {
		t.Errorf("test covers %d params, package has %d", len(paramTypes), len(ParamNames()))
	}

	// params keeps the canonical order and refuses mistakes.
	got := params(ParamAutoFix, ParamSeed)
	if len(got) != 2 || got[0].Name != ParamSeed || got[1].Name != ParamAutoFix {
		t.Errorf("params order: %+v", got)
	}
	for _, bad := range [][]string{{"steps"}, {ParamSeed, ParamSeed}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("params(%v) did not panic", bad)
				}
			}()
			params(bad...)
		}()
	}
}

func TestBuildCatalogRejectsDuplicateIDs(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("buildCatalog accepted a duplicate id")
		}
	}()
	buildCatalog([]spec{specs[0], specs[0]})
}

// mutate changes everything reachable from m.
func mutate(m *Model) {
	m.ID = "changed"
	m.Name = "changed"
	m.Operations[0] = "changed"
	m.Operations = append(m.Operations, "extra")
	m.Resolutions[0] = "changed"
	m.Durations[0] = -1
	m.AspectRatios[0] = "changed"
	if len(m.Styles) > 0 {
		m.Styles[0] = "changed"
	}
	m.Styles = append(m.Styles, "extra")
	for k := range m.CreditsPerSecond {
		m.CreditsPerSecond[k] = -1
	}
	m.CreditsPerSecond["8k"] = 1
	for i := range m.Parameters {
		p := &m.Parameters[i]
		p.Name = "changed"
		if p.Min != nil {
			*p.Min = -42
		}
		if p.Max != nil {
			*p.Max = -42
		}
		if len(p.Enum) > 0 {
			p.Enum[0] = "changed"
		}
	}
	for k := range m.Requirements.GPUMemoryGB {
		m.Requirements.GPUMemoryGB[k] = -1
	}
	for k := range m.Requirements.GPUSecondsPerOutputSecond {
		m.Requirements.GPUSecondsPerOutputSecond[k] = -1
	}
	m.Requirements.GPUCount = -1
}

func TestReadsReturnCopies(t *testing.T) {
	before := All()

	all := All()
	for i := range all {
		mutate(&all[i])
	}
	for _, id := range IDs() {
		m, _ := Get(id)
		mutate(&m)
		if p, ok := catalog[byID[id]].Param(ParamSeed); ok {
			*p.Min = 99 // Model.Param copies too
		}
	}
	ids := IDs()
	ids[0] = "changed"

	after := All()
	if !reflect.DeepEqual(before, after) {
		t.Fatal("mutating results of All/Get/Param/IDs changed the catalog")
	}
	if IDs()[0] == "changed" {
		t.Fatal("IDs() shares its slice")
	}
	// Spot-check one model in full detail.
	m, _ := Get("vidu-q1")
	if m.Styles[0] != "general" || m.Parameters[1].Enum[0] != "general" || *m.Parameters[0].Max != MaxSeed {
		t.Fatalf("vidu-q1 changed: %+v", m)
	}
}

func TestConcurrentReads(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, m := range All() {
				mutate(&m)
				if _, err := Validate(ManualRequest{Model: IDs()[0], Operation: TextToVideo}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestModelJSON(t *testing.T) {
	required := []string{
		"id", "object", "name", "provider", "family", "description",
		"operations", "resolutions", "durations", "aspect_ratios", "styles",
		"credits_per_second", "default_resolution", "default_duration",
		"default_aspect_ratio", "parameters", "requirements",
	}
	for _, m := range All() {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		for _, k := range required {
			v, ok := obj[k]
			if !ok {
				t.Errorf("%s: JSON lacks %q", m.ID, k)
			} else if string(v) == "null" {
				t.Errorf("%s: JSON %q is null", m.ID, k)
			}
		}
		if _, ok := obj["max_images"]; ok != m.Supports(MultipleImages) {
			t.Errorf("%s: max_images present = %v", m.ID, ok)
		}
		if len(m.Styles) == 0 && string(obj["styles"]) != "[]" {
			t.Errorf("%s: styles = %s, want []", m.ID, obj["styles"])
		}
		if len(m.Parameters) == 0 && string(obj["parameters"]) != "[]" {
			t.Errorf("%s: parameters = %s, want []", m.ID, obj["parameters"])
		}
		var req map[string]json.RawMessage
		if err := json.Unmarshal(obj["requirements"], &req); err != nil {
			t.Fatalf("%s: requirements: %v", m.ID, err)
		}
		for _, k := range []string{"gpu_memory_gb", "gpu_count", "gpu_seconds_per_output_second"} {
			if _, ok := req[k]; !ok {
				t.Errorf("%s: requirements lack %q", m.ID, k)
			}
		}

		// Round trip.
		var back Model
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Errorf("%s: JSON round trip differs:\n got %+v\nwant %+v", m.ID, back, m)
		}
	}

	// Field types as a client sees them.
	m, _ := Get("kling-2.1-master")
	raw, _ := json.Marshal(m)
	for _, frag := range []string{
		`"operations":["text_to_video","image_to_video"]`,
		`"resolutions":["720p","1080p"]`,
		`"durations":[5,10]`,
		`"aspect_ratios":["16:9","9:16","1:1"]`,
		`"styles":[]`,
		`"credits_per_second":{"1080p":28,"720p":20}`,
		`{"name":"cfg_scale","type":"number","minimum":0,"maximum":1,`,
	} {
		if !strings.Contains(string(raw), frag) {
			t.Errorf("kling-2.1-master JSON lacks %s:\n%s", frag, raw)
		}
	}
}

func TestModelHelpers(t *testing.T) {
	m, _ := Get("kling-2.1-pro")
	if m.Supports(TextToVideo) || !m.Supports(ImageToVideo) || !m.Supports(FirstLastFrame) {
		t.Errorf("Supports wrong for %v", m.Operations)
	}
	if got := m.ParamNames(); !slices.Equal(got, []string{ParamNegativePrompt, ParamCfgScale}) {
		t.Errorf("ParamNames = %v", got)
	}
	if _, ok := m.Param(ParamSeed); ok {
		t.Error("Param(seed) found on kling")
	}
	luma, _ := Get("luma-ray-2")
	if got := luma.ParamNames(); got == nil || len(got) != 0 {
		t.Errorf("luma ParamNames = %#v, want empty non-nil", got)
	}

	for _, o := range Operations() {
		if !o.Valid() {
			t.Errorf("%s not valid", o)
		}
	}
	fields := map[Operation]string{
		TextToVideo: "model", ImageToVideo: "image_url", FirstLastFrame: "first_frame_url",
		MultipleImages: "image_urls", "": "operation", "video_to_video": "operation",
	}
	for o, want := range fields {
		if got := o.RequestField(); got != want {
			t.Errorf("%q.RequestField() = %q, want %q", o, got, want)
		}
	}
	if Operation("").Valid() || Operation("TEXT_TO_VIDEO").Valid() {
		t.Error("invalid operation reported valid")
	}
}

// TestGPUNeeds holds the in-place read to what a copy of the model says,
// for every model and resolution, and refuses what the catalog lacks.
func TestGPUNeeds(t *testing.T) {
	for _, m := range All() {
		for _, res := range m.Resolutions {
			gpus, mem, ok, hasRes := GPUNeeds(m.ID, res)
			want, wantRes := m.Requirements.GPUMemoryGB[res]
			if !ok || hasRes != wantRes || mem != want || gpus != max(m.Requirements.GPUCount, 1) || gpus < 1 {
				t.Errorf("GPUNeeds(%q, %q) = %d GPUs, %d GB, %v, %v; the model says %d GPUs, %d GB, %v",
					m.ID, res, gpus, mem, ok, hasRes, m.Requirements.GPUCount, want, wantRes)
			}
		}
		if _, _, ok, hasRes := GPUNeeds(m.ID, "9999p"); !ok || hasRes {
			t.Errorf("GPUNeeds(%q, 9999p): known %v, resolution %v; want a known model without it", m.ID, ok, hasRes)
		}
	}
	if _, _, ok, hasRes := GPUNeeds("no-such-model", "720p"); ok || hasRes {
		t.Errorf("an unknown model: known %v, resolution %v", ok, hasRes)
	}
}
