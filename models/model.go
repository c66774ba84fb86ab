package models

// Operation is what a manual render does with its inputs. The API layer
// infers it from the request: text_to_video by default, image_url gives
// image_to_video, first_frame_url with last_frame_url gives first_last_frame,
// and image_urls gives multiple_images.
type Operation string

// The operations a model may support.
const (
	TextToVideo    Operation = "text_to_video"
	ImageToVideo   Operation = "image_to_video"
	FirstLastFrame Operation = "first_last_frame"
	MultipleImages Operation = "multiple_images"
)

// Operations returns every operation, in a fixed order.
func Operations() []Operation {
	return []Operation{TextToVideo, ImageToVideo, FirstLastFrame, MultipleImages}
}

// Valid reports whether o is one of the four operations.
func (o Operation) Valid() bool {
	switch o {
	case TextToVideo, ImageToVideo, FirstLastFrame, MultipleImages:
		return true
	}
	return false
}

// RequestField is the request field that selects o, and so the field a
// validation error about o is reported on: "model" for text_to_video (it is
// the default, selected by sending no image), "image_url", "first_frame_url"
// or "image_urls". It is "operation" for an invalid value.
func (o Operation) RequestField() string {
	switch o {
	case TextToVideo:
		return "model"
	case ImageToVideo:
		return "image_url"
	case FirstLastFrame:
		return "first_frame_url"
	case MultipleImages:
		return "image_urls"
	}
	return "operation"
}

// Names of the advanced manual request fields, in the order Validate checks
// them.
const (
	ParamNegativePrompt    = "negative_prompt"
	ParamSeed              = "seed"
	ParamGenerateAudio     = "generate_audio"
	ParamStyle             = "style"
	ParamMovementAmplitude = "movement_amplitude"
	ParamCfgScale          = "cfg_scale"
	ParamCameraFixed       = "camera_fixed"
	ParamAutoFix           = "auto_fix"
)

// ParamNames returns the names of all advanced fields, in the order Validate
// checks them.
func ParamNames() []string {
	return []string{
		ParamNegativePrompt, ParamSeed, ParamGenerateAudio, ParamStyle,
		ParamMovementAmplitude, ParamCfgScale, ParamCameraFixed, ParamAutoFix,
	}
}

// Limits of the advanced fields (see the package documentation).
const (
	MaxNegativePromptLength = 2500       // characters (Unicode code points)
	MaxSeed                 = 2147483647 // seeds are 0..MaxSeed
)

// MovementAmplitudes returns the values movement_amplitude accepts.
func MovementAmplitudes() []string {
	return []string{"auto", "small", "medium", "large"}
}

// Param describes one advanced manual field a model accepts.
type Param struct {
	Name        string   `json:"name"` // request field name, e.g. "cfg_scale"
	Type        string   `json:"type"` // "string" | "integer" | "number" | "boolean"
	Min         *float64 `json:"minimum,omitempty"`
	Max         *float64 `json:"maximum,omitempty"`
	MaxLength   int      `json:"max_length,omitempty"` // strings
	Enum        []string `json:"enum,omitempty"`
	Description string   `json:"description"`
}

// Requirements is what rendering on a model needs, for the scheduler and the
// simulator. Both maps have an entry for every resolution the model offers.
type Requirements struct {
	// GPUMemoryGB is the memory needed on each GPU of a render, per
	// resolution.
	GPUMemoryGB map[string]int `json:"gpu_memory_gb"`
	// GPUCount is how many GPUs one render uses at once: usually 1, 2 or 4
	// for the largest models.
	GPUCount int `json:"gpu_count"`
	// GPUSecondsPerOutputSecond is the GPU time of a reference H100, summed
	// over all GPUCount GPUs, per second of output video, per resolution.
	GPUSecondsPerOutputSecond map[string]float64 `json:"gpu_seconds_per_output_second"`
}

// Model is one entry of the catalog, as served by GET /v1/models.
type Model struct {
	ID                 string         `json:"id"`
	Object             string         `json:"object"` // always "model"
	Name               string         `json:"name"`
	Provider           string         `json:"provider"`
	Family             string         `json:"family"` // "kling", "vidu", ...
	Description        string         `json:"description"`
	Operations         []Operation    `json:"operations"`
	Resolutions        []string       `json:"resolutions"` // lowest first
	Durations          []int          `json:"durations"`   // seconds, ascending
	AspectRatios       []string       `json:"aspect_ratios"`
	Styles             []string       `json:"styles"`             // empty, never nil, when none
	CreditsPerSecond   map[string]int `json:"credits_per_second"` // resolution -> credits per output second
	DefaultResolution  string         `json:"default_resolution"`
	DefaultDuration    int            `json:"default_duration"`
	DefaultAspectRatio string         `json:"default_aspect_ratio"`
	MaxImages          int            `json:"max_images,omitempty"` // for multiple_images
	Parameters         []Param        `json:"parameters"`           // advanced fields this model accepts
	Requirements       Requirements   `json:"requirements"`
}

// Supports reports whether m offers operation op.
func (m Model) Supports(op Operation) bool {
	for _, o := range m.Operations {
		if o == op {
			return true
		}
	}
	return false
}

// Param returns the advanced field called name, if m accepts it.
func (m Model) Param(name string) (Param, bool) {
	for _, p := range m.Parameters {
		if p.Name == name {
			return cloneParam(p), true
		}
	}
	return Param{}, false
}

// ParamNames returns the names of the advanced fields m accepts, in the
// order of m.Parameters (never nil).
func (m Model) ParamNames() []string {
	names := make([]string, 0, len(m.Parameters))
	for _, p := range m.Parameters {
		names = append(names, p.Name)
	}
	return names
}

// GPUSeconds is the total reference-H100 GPU time, over all
// Requirements.GPUCount GPUs, of a render of the given length at resolution.
// It is 0 for a resolution m does not offer or a non-positive length.
func (m Model) GPUSeconds(resolution string, seconds int) float64 {
	if seconds <= 0 {
		return 0
	}
	return m.Requirements.GPUSecondsPerOutputSecond[resolution] * float64(seconds)
}

// resolutionRank orders the resolutions vidfarm knows, lowest first.
var resolutionRank = map[string]int{
	"480p":  1,
	"540p":  2,
	"720p":  3,
	"1080p": 4,
	"4k":    5,
}

// clone returns a deep copy of m. Slices of the copy are never nil.
func (m Model) clone() Model {
	c := m
	c.Operations = append(make([]Operation, 0, len(m.Operations)), m.Operations...)
	c.Resolutions = cloneStrings(m.Resolutions)
	c.Durations = append(make([]int, 0, len(m.Durations)), m.Durations...)
	c.AspectRatios = cloneStrings(m.AspectRatios)
	c.Styles = cloneStrings(m.Styles)
	c.CreditsPerSecond = cloneMap(m.CreditsPerSecond)
	c.Parameters = make([]Param, 0, len(m.Parameters))
	for _, p := range m.Parameters {
		c.Parameters = append(c.Parameters, cloneParam(p))
	}
	c.Requirements.GPUMemoryGB = cloneMap(m.Requirements.GPUMemoryGB)
	c.Requirements.GPUSecondsPerOutputSecond = cloneMap(m.Requirements.GPUSecondsPerOutputSecond)
	return c
}

func cloneParam(p Param) Param {
	c := p
	if p.Min != nil {
		v := *p.Min
		c.Min = &v
	}
	if p.Max != nil {
		v := *p.Max
		c.Max = &v
	}
	if p.Enum != nil {
		c.Enum = cloneStrings(p.Enum)
	}
	return c
}

func cloneStrings(s []string) []string {
	return append(make([]string, 0, len(s)), s...)
}

func cloneMap[V any](m map[string]V) map[string]V {
	c := make(map[string]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
