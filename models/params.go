package models

import "fmt"

// paramDef returns the definition of the advanced field called name, as every
// model that accepts it describes it. The style field's Enum is left empty
// here: it is the model's Styles, filled in when the catalog is built.
func paramDef(name string) Param {
	switch name {
	case ParamNegativePrompt:
		return Param{
			Name:        name,
			Type:        "string",
			MaxLength:   MaxNegativePromptLength,
			Description: "What the video should avoid, e.g. \"blurry, text, watermark\".",
		}
	case ParamSeed:
		return Param{
			Name:        name,
			Type:        "integer",
			Min:         floatPtr(0),
			Max:         floatPtr(MaxSeed),
			Description: "Random seed; the same seed and inputs reproduce a render where the model is deterministic.",
		}
	case ParamGenerateAudio:
		return Param{
			Name:        name,
			Type:        "boolean",
			Description: "Render a synchronised soundtrack (dialogue, effects, ambience) with the video.",
		}
	case ParamStyle:
		return Param{
			Name:        name,
			Type:        "string",
			Description: "Visual style of the render; one of the model's styles.",
		}
	case ParamMovementAmplitude:
		return Param{
			Name:        name,
			Type:        "string",
			Enum:        MovementAmplitudes(),
			Description: "How much the subject and camera move; auto lets the model decide.",
		}
	case ParamCfgScale:
		return Param{
			Name:        name,
			Type:        "number",
			Min:         floatPtr(0),
			Max:         floatPtr(1),
			Description: "How closely the render follows the prompt, from 0 (freer) to 1 (stricter).",
		}
	case ParamCameraFixed:
		return Param{
			Name:        name,
			Type:        "boolean",
			Description: "Keep the camera still for the whole shot.",
		}
	case ParamAutoFix:
		return Param{
			Name:        name,
			Type:        "boolean",
			Description: "Let the model rewrite and expand the prompt before rendering.",
		}
	}
	panic(fmt.Sprintf("models: no advanced field %q", name))
}

// params builds a model's Parameters from field names, in the canonical
// order of ParamNames whatever the order given.
func params(names ...string) []Param {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if want[n] {
			panic(fmt.Sprintf("models: advanced field %q listed twice", n))
		}
		want[n] = true
	}
	ps := make([]Param, 0, len(names))
	for _, n := range ParamNames() {
		if want[n] {
			ps = append(ps, paramDef(n))
			delete(want, n)
		}
	}
	for n := range want {
		panic(fmt.Sprintf("models: no advanced field %q", n))
	}
	return ps
}

func floatPtr(v float64) *float64 { return &v }
