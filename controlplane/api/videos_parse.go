package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/models"
)

// Request field sets. A field of the other mode is refused, naming the field, so a
// client never believes a setting was applied when it was ignored.
var (
	commonFields = []string{"mode", "prompt", "duration_seconds", "folder_id", "name"}
	autoFields   = []string{"avatar_id", "voice_id", "brand_kit_id", "style_id", "file_asset_ids", "orientation"}
	manualFields = []string{
		"model", "resolution", "aspect_ratio", "image_url", "first_frame_url", "last_frame_url", "image_urls",
		"negative_prompt", "seed", "generate_audio", "style", "movement_amplitude", "cfg_scale", "camera_fixed", "auto_fix",
	}
)

// Limits of fields the contract leaves open.
const (
	maxPrompt        = 5000
	maxName          = 200
	maxIDField       = 128
	maxAssets        = 20
	maxURL           = 2048
	defaultAutoSecs  = 30
	DefaultManualMdl = "wan-2.2-a14b" // used when a manual request names no model
)

// parseCreate validates a POST /v1/videos body into a spec and its price.
func (a *API) parseCreate(ctx context.Context, accountID string, body []byte) (fsm.Spec, int64, *apierr.Error) {
	o, e := decodeObject(body)
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	mode, present, e := o.str("mode")
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	if !present {
		return fsm.Spec{}, 0, apierr.Invalid("mode", `field "mode" is required: "auto" or "manual"`).With("allowed", []string{"auto", "manual"})
	}
	var own, other []string
	switch mode {
	case fsm.ModeAuto:
		own, other = autoFields, manualFields
	case fsm.ModeManual:
		own, other = manualFields, autoFields
	default:
		return fsm.Spec{}, 0, apierr.Invalid("mode", fmt.Sprintf("mode %q is not valid: use \"auto\" or \"manual\"", mode)).With("allowed", []string{"auto", "manual"})
	}
	for _, k := range o.sortedKeys() {
		if slices.Contains(other, k) {
			return fsm.Spec{}, 0, apierr.Invalid(k, fmt.Sprintf("field %q applies to the other mode and cannot be sent with mode %q", k, mode)).With("mode", mode)
		}
	}
	if e := o.checkFields(append(slices.Clone(commonFields), own...)...); e != nil {
		return fsm.Spec{}, 0, e
	}
	spec := fsm.Spec{Mode: mode}
	if e := a.parseCommon(o, accountID, &spec); e != nil {
		return fsm.Spec{}, 0, e
	}
	dur, e := o.integer("duration_seconds")
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	if mode == fsm.ModeAuto {
		spec, price, e := parseAuto(o, spec, dur)
		if e == nil {
			e = a.checkVoice(spec.VoiceID)
		}
		if e == nil {
			e = a.checkAvatar(accountID, spec.AvatarID)
		}
		if e != nil {
			return fsm.Spec{}, 0, e
		}
		return spec, price, nil
	}
	return parseManual(o, spec, dur, func(field, raw string) *apierr.Error { return a.checkInputURL(ctx, field, raw) })
}

func (a *API) parseCommon(o object, accountID string, spec *fsm.Spec) *apierr.Error {
	prompt, present, e := o.str("prompt")
	if e != nil {
		return e
	}
	n := utf8.RuneCountInString(prompt)
	switch {
	case !present:
		return apierr.Invalid("prompt", `field "prompt" is required (1 to 5000 characters)`)
	case n < 1:
		return apierr.Invalid("prompt", "prompt must not be empty").With("min_length", 1)
	case strings.TrimSpace(prompt) == "":
		// Long enough, but it cannot describe a video: min_length would
		// contradict the characters the client can see it sent.
		return apierr.Invalid("prompt", fmt.Sprintf("prompt holds only whitespace (%d characters); it must describe the video", n)).
			With("reason", "blank")
	case n > maxPrompt:
		return apierr.Invalid("prompt", fmt.Sprintf("prompt has %d characters; the limit is %d", n, maxPrompt)).With("max_length", maxPrompt)
	}
	if e := checkLongText("prompt", prompt); e != nil {
		return e
	}
	spec.Prompt = prompt
	if spec.Name, _, e = o.str("name"); e != nil {
		return e
	}
	if n := utf8.RuneCountInString(spec.Name); n > maxName {
		return apierr.Invalid("name", fmt.Sprintf("name has %d characters; the limit is %d", n, maxName)).With("max_length", maxName)
	}
	if e := checkName("name", spec.Name); e != nil {
		return e
	}
	if spec.FolderID, _, e = o.str("folder_id"); e != nil {
		return e
	}
	if spec.FolderID != "" {
		if _, ok := a.fsm.Folder(accountID, spec.FolderID); !ok {
			return apierr.Invalid("folder_id", fmt.Sprintf("no folder %q in this account; list folders with GET /v1/folders", spec.FolderID))
		}
	}
	return nil
}

func parseAuto(o object, spec fsm.Spec, dur *int64) (fsm.Spec, int64, *apierr.Error) {
	switch {
	case dur == nil:
		spec.DurationSeconds = defaultAutoSecs
	case *dur >= models.AutoMinDuration && *dur <= models.AutoMaxDuration:
		spec.DurationSeconds = int(*dur)
	default:
		return fsm.Spec{}, 0, apierr.Invalid("duration_seconds",
			fmt.Sprintf("duration_seconds %d is out of range: auto videos last %d to %d seconds", *dur, models.AutoMinDuration, models.AutoMaxDuration)).
			With("minimum", models.AutoMinDuration).With("maximum", models.AutoMaxDuration)
	}
	var e *apierr.Error
	for _, f := range []struct {
		name    string
		dst     *string
		prefix  string
		omitted string // what leaving the field out gives
		source  string // where the ids come from
	}{
		{"avatar_id", &spec.AvatarID, "", "the default presenter", "GET /v1/avatars"},
		{"voice_id", &spec.VoiceID, "", "the default voice", "GET /v1/voices"},
		{"brand_kit_id", &spec.BrandKitID, "br_", "no brand kit", "GET /v1/brand-kits"},
		{"style_id", &spec.StyleID, "", "no template", "the template provider"},
	} {
		var present bool
		if *f.dst, present, e = o.str(f.name); e != nil {
			return fsm.Spec{}, 0, e
		}
		// An empty id names nothing; reading it as "not sent" would hand the
		// client a default it did not ask for (as with image_url below).
		if present && *f.dst == "" {
			return fsm.Spec{}, 0, apierr.Invalid(f.name, fmt.Sprintf("%s is empty; leave it out for %s, or send an id from %s", f.name, f.omitted, f.source)).
				With("reason", "empty")
		}
		if e := checkID(f.name, *f.dst, f.prefix); e != nil {
			return fsm.Spec{}, 0, e
		}
	}
	if spec.FileAssetIDs, _, e = o.strings("file_asset_ids"); e != nil {
		return fsm.Spec{}, 0, e
	}
	if len(spec.FileAssetIDs) > maxAssets {
		return fsm.Spec{}, 0, apierr.Invalid("file_asset_ids", fmt.Sprintf("at most %d assets per video", maxAssets)).With("max_items", maxAssets)
	}
	for _, id := range spec.FileAssetIDs {
		if id == "" || len(id) > maxIDField {
			return fsm.Spec{}, 0, apierr.Invalid("file_asset_ids", "each entry must be an asset_id from POST /v1/assets")
		}
	}
	orientation, present, e := o.str("orientation")
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	switch {
	case !present:
		orientation = "landscape"
	case orientation != "landscape" && orientation != "portrait":
		return fsm.Spec{}, 0, apierr.Invalid("orientation", fmt.Sprintf("orientation %q is not valid: use landscape or portrait", orientation)).
			With("allowed", []string{"landscape", "portrait"})
	}
	spec.Orientation = orientation
	return spec, int64(models.AutoCredits(spec.DurationSeconds)), nil
}

func checkID(field, v, prefix string) *apierr.Error {
	if v == "" {
		return nil
	}
	if len(v) > maxIDField {
		return apierr.Invalid(field, fmt.Sprintf("%s is longer than %d characters", field, maxIDField))
	}
	if prefix != "" && !strings.HasPrefix(v, prefix) {
		return apierr.Invalid(field, fmt.Sprintf("%s must start with %q", field, prefix))
	}
	return nil
}

// urlCheck checks one image address of a request, naming its field.
type urlCheck func(field, raw string) *apierr.Error

func parseManual(o object, spec fsm.Spec, dur *int64, checkURL urlCheck) (fsm.Spec, int64, *apierr.Error) {
	// model, resolution and aspect_ratio are kept as sent or nil: only a field
	// left out (or null) takes its default. A sent "" is not "the default":
	// charging for a model or resolution the client did not name would be a
	// guess, so "" is refused like any other value nothing offers.
	model, e := o.optStr("model")
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	resolution, e := o.optStr("resolution")
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	aspectRatio, e := o.optStr("aspect_ratio")
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"image_url", &spec.ImageURL}, {"first_frame_url", &spec.FirstFrameURL}, {"last_frame_url", &spec.LastFrameURL},
	} {
		if *f.dst, _, e = o.str(f.name); e != nil {
			return fsm.Spec{}, 0, e
		}
	}
	if spec.ImageURLs, _, e = o.strings("image_urls"); e != nil {
		return fsm.Spec{}, 0, e
	}
	// An empty address is not "no image": it would silently change the operation.
	for _, f := range []string{"image_url", "first_frame_url", "last_frame_url"} {
		if v, present, _ := o.str(f); present && v == "" {
			return fsm.Spec{}, 0, checkURL(f, v)
		}
	}
	op, e := inferOperation(&spec, checkURL)
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	req := models.ManualRequest{
		Model: DefaultManualMdl, Operation: op, Resolution: resolution, AspectRatio: aspectRatio,
		ImageCount: len(spec.ImageURLs),
	}
	if model != nil {
		req.Model = *model
	}
	if dur != nil {
		// 0 is a value the client sent, not "use the default"; no model renders it.
		if *dur <= 0 || *dur > math.MaxInt32 {
			return fsm.Spec{}, 0, manualDurationError(req.Model, *dur)
		}
		req.DurationSeconds = int(*dur)
	}
	if e := parseAdvanced(o, &req); e != nil {
		return fsm.Spec{}, 0, e
	}
	res, err := models.Validate(req)
	if err != nil {
		return fsm.Spec{}, 0, modelError(req.Model, err)
	}
	// After the model's checks: a model that takes no negative_prompt says
	// so first, whatever the text holds.
	if res.NegativePrompt != nil {
		if e := checkLongText("negative_prompt", *res.NegativePrompt); e != nil {
			return fsm.Spec{}, 0, e
		}
	}
	spec.Model, spec.Operation = res.Model, string(res.Operation)
	spec.Resolution, spec.AspectRatio, spec.DurationSeconds = res.Resolution, res.AspectRatio, res.DurationSeconds
	spec.NegativePrompt, spec.Seed, spec.GenerateAudio, spec.Style = res.NegativePrompt, res.Seed, res.GenerateAudio, res.Style
	spec.MovementAmplitude, spec.CfgScale, spec.CameraFixed, spec.AutoFix = res.MovementAmplitude, res.CfgScale, res.CameraFixed, res.AutoFix
	return spec, int64(res.Credits), nil
}

func parseAdvanced(o object, req *models.ManualRequest) *apierr.Error {
	var e *apierr.Error
	if req.NegativePrompt, e = o.optStr("negative_prompt"); e != nil {
		return e
	}
	if req.Seed, e = o.integer("seed"); e != nil {
		return e
	}
	if req.GenerateAudio, e = o.boolean("generate_audio"); e != nil {
		return e
	}
	if req.Style, e = o.optStr("style"); e != nil {
		return e
	}
	if req.MovementAmplitude, e = o.optStr("movement_amplitude"); e != nil {
		return e
	}
	if req.CfgScale, e = o.number("cfg_scale"); e != nil {
		return e
	}
	if req.CameraFixed, e = o.boolean("camera_fixed"); e != nil {
		return e
	}
	req.AutoFix, e = o.boolean("auto_fix")
	return e
}

func (o object) optStr(field string) (*string, *apierr.Error) {
	s, present, e := o.str(field)
	if e != nil || !present {
		return nil, e
	}
	return &s, nil
}

// inferOperation picks the manual operation from which image fields are present.
func inferOperation(spec *fsm.Spec, checkURL urlCheck) (models.Operation, *apierr.Error) {
	var set []string
	if spec.ImageURL != "" {
		set = append(set, "image_url")
	}
	if spec.FirstFrameURL != "" || spec.LastFrameURL != "" {
		set = append(set, "first_frame_url/last_frame_url")
	}
	if spec.ImageURLs != nil {
		set = append(set, "image_urls")
	}
	if len(set) > 1 {
		return "", apierr.Invalid(strings.Split(set[1], "/")[0], "send only one of image_url, first_frame_url with last_frame_url, or image_urls: they select different operations").
			With("conflicting_fields", set)
	}
	switch {
	case spec.ImageURL != "":
		return models.ImageToVideo, checkURL("image_url", spec.ImageURL)
	case spec.FirstFrameURL != "" || spec.LastFrameURL != "":
		if spec.FirstFrameURL == "" || spec.LastFrameURL == "" {
			missing := "last_frame_url"
			if spec.FirstFrameURL == "" {
				missing = "first_frame_url"
			}
			return "", apierr.Invalid(missing, "first_frame_url and last_frame_url must be sent together")
		}
		if e := checkURL("first_frame_url", spec.FirstFrameURL); e != nil {
			return "", e
		}
		return models.FirstLastFrame, checkURL("last_frame_url", spec.LastFrameURL)
	case spec.ImageURLs != nil:
		if len(spec.ImageURLs) == 0 {
			return "", apierr.Invalid("image_urls", "image_urls must hold at least one address")
		}
		for _, u := range spec.ImageURLs {
			if e := checkURL("image_urls", u); e != nil {
				return "", e
			}
		}
		return models.MultipleImages, nil
	}
	return models.TextToVideo, nil
}

func modelError(id string, err error) *apierr.Error {
	var fe *models.FieldError
	switch {
	case errors.Is(err, models.ErrUnknownModel):
		msg := fmt.Sprintf("unknown model %q; GET /v1/models lists the models", id)
		if id == "" {
			msg = fmt.Sprintf("model must not be empty; leave it out for the default (%s) or send an id from GET /v1/models", DefaultManualMdl)
		}
		return apierr.New(http.StatusBadRequest, apierr.CodeUnknownModel, msg).
			With("field", "model").With("model", id).With("existing_model_ids", models.IDs())
	case errors.As(err, &fe):
		e := apierr.Invalid(fe.Field, fe.Message).With("model", fe.Model)
		if fe.Allowed != nil {
			e = e.With("allowed", allowedValues(fe))
		}
		return e
	}
	return apierr.Invalid("model", err.Error())
}

// manualDurationError explains a duration no model could render, with the model's
// own durations when the model exists.
func manualDurationError(model string, d int64) *apierr.Error {
	m, ok := models.Get(model)
	if !ok {
		return modelError(model, models.ErrUnknownModel)
	}
	return apierr.Invalid("duration_seconds", fmt.Sprintf("duration_seconds %d is not offered by %s", d, m.ID)).
		With("model", m.ID).With("allowed", m.Durations)
}

// allowedValues lists a field's allowed values with the field's own JSON type:
// durations are integers, as the client sends them, not strings.
func allowedValues(fe *models.FieldError) any {
	if fe.Field != "duration_seconds" {
		return fe.Allowed
	}
	out := make([]int, 0, len(fe.Allowed))
	for _, s := range fe.Allowed {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fe.Allowed
		}
		out = append(out, n)
	}
	return out
}
