package models

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrUnknownModel is returned, wrapped, by Validate when the request names a
// model id that is not in the catalog. The API answers 400 unknown_model and
// lists IDs().
var ErrUnknownModel = errors.New("unknown model")

// FieldError is a validation failure of one request field. The API turns it
// into 400 invalid_request with details {"field":..., "allowed":[...],
// "model":...}.
type FieldError struct {
	Field   string   // request field name, e.g. "resolution"
	Message string   // human text a person can act on
	Allowed []string // allowed values as strings; never nil, may be empty
	Model   string   // the model id the request named
}

// Error returns the message.
func (e *FieldError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("invalid %s for model %s", e.Field, e.Model)
	}
	return e.Message
}

// ManualRequest is a manual-mode request after JSON decoding (types already
// checked by the API layer). Zero values and nil pointers mean "not sent".
type ManualRequest struct {
	Model string
	// Operation is inferred by the API layer: text_to_video by default (also
	// when empty here); image_url -> image_to_video; first_frame_url with
	// last_frame_url -> first_last_frame; image_urls -> multiple_images.
	Operation Operation
	// Resolution and AspectRatio are nil when not sent, which means the
	// model's default. A sent "" is a value like any other, and refused: a
	// client that sent one asked for something, and charging it for the
	// default would be a guess.
	Resolution      *string
	AspectRatio     *string
	DurationSeconds int // 0 means the model default
	ImageCount      int // len(image_urls), for multiple_images

	NegativePrompt    *string
	Seed              *int64
	GenerateAudio     *bool
	Style             *string
	MovementAmplitude *string
	CfgScale          *float64
	CameraFixed       *bool
	AutoFix           *bool
}

// Resolved is a validated manual request with defaults filled in and its
// price. The advanced fields are copies of the ones sent (nil when not sent),
// so the Resolved shares no memory with the request.
type Resolved struct {
	Model           string
	Operation       Operation
	Resolution      string
	AspectRatio     string
	DurationSeconds int
	Credits         int // price of this request

	NegativePrompt    *string
	Seed              *int64
	GenerateAudio     *bool
	Style             *string
	MovementAmplitude *string
	CfgScale          *float64
	CameraFixed       *bool
	AutoFix           *bool
}

// Validate checks req against its model and returns the resolved, priced
// request. An unknown model gives an error wrapping ErrUnknownModel; any
// other failure is a *FieldError for the first failing field, in the order:
// operation, resolution, duration_seconds, aspect_ratio, image_urls count,
// then negative_prompt, seed, generate_audio, style, movement_amplitude,
// cfg_scale, camera_fixed, auto_fix.
func Validate(req ManualRequest) (Resolved, error) {
	m, ok := lookup(req.Model)
	if !ok {
		return Resolved{}, fmt.Errorf("%w %q", ErrUnknownModel, req.Model)
	}

	op := req.Operation
	if op == "" {
		op = TextToVideo
	}
	if !m.Supports(op) {
		return Resolved{}, operationError(m, op)
	}

	res := m.DefaultResolution
	if req.Resolution != nil {
		res = *req.Resolution
	}
	if !slices.Contains(m.Resolutions, res) {
		return Resolved{}, choiceError(m, "resolution", res, m.Resolutions, m.DefaultResolution)
	}

	dur := req.DurationSeconds
	if dur == 0 {
		dur = m.DefaultDuration
	}
	if !slices.Contains(m.Durations, dur) {
		allowed := durationStrings(m.Durations)
		return Resolved{}, &FieldError{
			Field: "duration_seconds",
			Message: fmt.Sprintf("duration_seconds %d is not offered by %s; choose one of %s",
				dur, m.ID, strings.Join(allowed, ", ")),
			Allowed: allowed,
			Model:   m.ID,
		}
	}

	ar := m.DefaultAspectRatio
	if req.AspectRatio != nil {
		ar = *req.AspectRatio
	}
	if !slices.Contains(m.AspectRatios, ar) {
		return Resolved{}, choiceError(m, "aspect_ratio", ar, m.AspectRatios, m.DefaultAspectRatio)
	}

	if op == MultipleImages && (req.ImageCount < 1 || req.ImageCount > m.MaxImages) {
		return Resolved{}, &FieldError{
			Field: "image_urls",
			Message: fmt.Sprintf("%s accepts 1 to %d image_urls; got %d",
				m.ID, m.MaxImages, req.ImageCount),
			Allowed: []string{fmt.Sprintf("1..%d", m.MaxImages)},
			Model:   m.ID,
		}
	}

	if err := checkAdvanced(m, req); err != nil {
		return Resolved{}, err
	}

	return Resolved{
		Model:             m.ID,
		Operation:         op,
		Resolution:        res,
		AspectRatio:       ar,
		DurationSeconds:   dur,
		Credits:           m.Credits(res, dur),
		NegativePrompt:    clonePtr(req.NegativePrompt),
		Seed:              clonePtr(req.Seed),
		GenerateAudio:     clonePtr(req.GenerateAudio),
		Style:             clonePtr(req.Style),
		MovementAmplitude: clonePtr(req.MovementAmplitude),
		CfgScale:          clonePtr(req.CfgScale),
		CameraFixed:       clonePtr(req.CameraFixed),
		AutoFix:           clonePtr(req.AutoFix),
	}, nil
}

// choiceError reports a value of field that m does not offer. An empty value
// gets its own message: "not offered" would read as if some model offered "",
// when what the client can do is leave the field out or pick a value.
func choiceError(m Model, field, v string, offered []string, def string) *FieldError {
	msg := fmt.Sprintf("%s %q is not offered by %s; choose one of %s",
		field, v, m.ID, strings.Join(offered, ", "))
	if v == "" {
		msg = fmt.Sprintf("%s must not be empty; leave it out for %s's default (%s) or choose one of %s",
			field, m.ID, def, strings.Join(offered, ", "))
	}
	return &FieldError{Field: field, Message: msg, Allowed: cloneStrings(offered), Model: m.ID}
}

// operationError reports that m does not offer op, on the request field that
// selected op, and says which inputs select the operations m does offer.
func operationError(m Model, op Operation) *FieldError {
	allowed := make([]string, len(m.Operations))
	hints := make([]string, len(m.Operations))
	for i, o := range m.Operations {
		allowed[i] = string(o)
		hints[i] = fmt.Sprintf("%s (%s)", o, operationInputs(o))
	}
	return &FieldError{
		Field: op.RequestField(),
		Message: fmt.Sprintf("%s does not support %s; it supports %s",
			m.ID, op, strings.Join(hints, ", ")),
		Allowed: allowed,
		Model:   m.ID,
	}
}

// operationInputs describes the request inputs that select o.
func operationInputs(o Operation) string {
	switch o {
	case TextToVideo:
		return "prompt only"
	case ImageToVideo:
		return "send image_url"
	case FirstLastFrame:
		return "send first_frame_url and last_frame_url"
	case MultipleImages:
		return "send image_urls"
	}
	return "unknown"
}

// checkAdvanced checks the advanced fields that were sent, in the fixed
// order, against the definitions in m.Parameters.
func checkAdvanced(m Model, req ManualRequest) error {
	if v := req.NegativePrompt; v != nil {
		if err := checkString(m, ParamNegativePrompt, *v); err != nil {
			return err
		}
	}
	if v := req.Seed; v != nil {
		if err := checkNumber(m, ParamSeed, float64(*v), strconv.FormatInt(*v, 10)); err != nil {
			return err
		}
	}
	if v := req.GenerateAudio; v != nil {
		if _, err := accepted(m, ParamGenerateAudio); err != nil {
			return err
		}
	}
	if v := req.Style; v != nil {
		// A model without styles has no style parameter, but what a client
		// needs to hear is that there is no style to choose, with the
		// model's styles (none) as the allowed values, not accepted()'s list
		// of parameter names, which are no values of style.
		if _, ok := m.Param(ParamStyle); !ok {
			return &FieldError{
				Field:   ParamStyle,
				Message: fmt.Sprintf("%s takes no style (its styles in GET /v1/models are empty); leave style out", m.ID),
				Allowed: cloneStrings(m.Styles),
				Model:   m.ID,
			}
		}
		if err := checkString(m, ParamStyle, *v); err != nil {
			return err
		}
	}
	if v := req.MovementAmplitude; v != nil {
		if err := checkString(m, ParamMovementAmplitude, *v); err != nil {
			return err
		}
	}
	if v := req.CfgScale; v != nil {
		if err := checkNumber(m, ParamCfgScale, *v, strconv.FormatFloat(*v, 'g', -1, 64)); err != nil {
			return err
		}
	}
	if v := req.CameraFixed; v != nil {
		if _, err := accepted(m, ParamCameraFixed); err != nil {
			return err
		}
	}
	if v := req.AutoFix; v != nil {
		if _, err := accepted(m, ParamAutoFix); err != nil {
			return err
		}
	}
	return nil
}

// accepted returns m's definition of the field name, or a FieldError listing
// the fields m does accept.
func accepted(m Model, name string) (Param, error) {
	for _, p := range m.Parameters {
		if p.Name == name {
			return p, nil
		}
	}
	names := m.ParamNames()
	msg := fmt.Sprintf("%s does not accept %s; it accepts %s", m.ID, name, strings.Join(names, ", "))
	if len(names) == 0 {
		msg = fmt.Sprintf("%s does not accept %s; it accepts no advanced fields", m.ID, name)
	}
	return Param{}, &FieldError{Field: name, Message: msg, Allowed: names, Model: m.ID}
}

// checkString checks a string field against its enum and maximum length.
func checkString(m Model, name, v string) error {
	p, err := accepted(m, name)
	if err != nil {
		return err
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
		return &FieldError{
			Field: name,
			Message: fmt.Sprintf("%s %q is not offered by %s; choose one of %s",
				name, v, m.ID, strings.Join(p.Enum, ", ")),
			Allowed: cloneStrings(p.Enum),
			Model:   m.ID,
		}
	}
	if p.MaxLength > 0 {
		if n := utf8.RuneCountInString(v); n > p.MaxLength {
			return &FieldError{
				Field: name,
				Message: fmt.Sprintf("%s is %d characters long; %s accepts at most %d",
					name, n, m.ID, p.MaxLength),
				Allowed: []string{fmt.Sprintf("0..%d", p.MaxLength)},
				Model:   m.ID,
			}
		}
	}
	return nil
}

// checkNumber checks a numeric field against its inclusive range; shown is
// the value as the client wrote it.
func checkNumber(m Model, name string, v float64, shown string) error {
	p, err := accepted(m, name)
	if err != nil {
		return err
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if p.Min != nil {
		lo = *p.Min
	}
	if p.Max != nil {
		hi = *p.Max
	}
	if v >= lo && v <= hi && !math.IsInf(v, 0) { // also false for NaN
		return nil
	}
	rng := formatBound(lo) + ".." + formatBound(hi)
	kind := "a number"
	if p.Type == "integer" {
		kind = "an integer"
	}
	return &FieldError{
		Field: name,
		Message: fmt.Sprintf("%s %s is out of range for %s; use %s from %s to %s",
			name, shown, m.ID, kind, formatBound(lo), formatBound(hi)),
		Allowed: []string{rng},
		Model:   m.ID,
	}
}

func formatBound(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func durationStrings(ds []int) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = strconv.Itoa(d)
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
