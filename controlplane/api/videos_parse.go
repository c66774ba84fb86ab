package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
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
func (a *API) parseCreate(accountID string, body []byte) (fsm.Spec, int64, *apierr.Error) {
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
	return parseManual(o, spec, dur, urlPolicy{private: a.cfg.AllowPrivateURLs})
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
	case n < 1 || strings.TrimSpace(prompt) == "":
		return apierr.Invalid("prompt", "prompt must not be empty").With("min_length", 1)
	case n > maxPrompt:
		return apierr.Invalid("prompt", fmt.Sprintf("prompt has %d characters; the limit is %d", n, maxPrompt)).With("max_length", maxPrompt)
	}
	spec.Prompt = prompt
	if spec.Name, _, e = o.str("name"); e != nil {
		return e
	}
	if n := utf8.RuneCountInString(spec.Name); n > maxName {
		return apierr.Invalid("name", fmt.Sprintf("name has %d characters; the limit is %d", n, maxName)).With("max_length", maxName)
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
		name   string
		dst    *string
		prefix string
	}{
		{"avatar_id", &spec.AvatarID, ""}, {"voice_id", &spec.VoiceID, ""},
		{"brand_kit_id", &spec.BrandKitID, "br_"}, {"style_id", &spec.StyleID, ""},
	} {
		if *f.dst, _, e = o.str(f.name); e != nil {
			return fsm.Spec{}, 0, e
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

func parseManual(o object, spec fsm.Spec, dur *int64, urls urlPolicy) (fsm.Spec, int64, *apierr.Error) {
	var e *apierr.Error
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"model", &spec.Model}, {"resolution", &spec.Resolution}, {"aspect_ratio", &spec.AspectRatio},
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
			return fsm.Spec{}, 0, urls.check(f, v)
		}
	}
	op, e := inferOperation(&spec, urls)
	if e != nil {
		return fsm.Spec{}, 0, e
	}
	req := models.ManualRequest{
		Model: spec.Model, Operation: op, Resolution: spec.Resolution, AspectRatio: spec.AspectRatio,
		ImageCount: len(spec.ImageURLs),
	}
	if req.Model == "" {
		req.Model = DefaultManualMdl
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
func inferOperation(spec *fsm.Spec, urls urlPolicy) (models.Operation, *apierr.Error) {
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
		return models.ImageToVideo, urls.check("image_url", spec.ImageURL)
	case spec.FirstFrameURL != "" || spec.LastFrameURL != "":
		if spec.FirstFrameURL == "" || spec.LastFrameURL == "" {
			missing := "last_frame_url"
			if spec.FirstFrameURL == "" {
				missing = "first_frame_url"
			}
			return "", apierr.Invalid(missing, "first_frame_url and last_frame_url must be sent together")
		}
		if e := urls.check("first_frame_url", spec.FirstFrameURL); e != nil {
			return "", e
		}
		return models.FirstLastFrame, urls.check("last_frame_url", spec.LastFrameURL)
	case spec.ImageURLs != nil:
		if len(spec.ImageURLs) == 0 {
			return "", apierr.Invalid("image_urls", "image_urls must hold at least one address")
		}
		for _, u := range spec.ImageURLs {
			if e := urls.check("image_urls", u); e != nil {
				return "", e
			}
		}
		return models.MultipleImages, nil
	}
	return models.TextToVideo, nil
}

// checkURL accepts only public https addresses. Names are resolved again when the
// image is fetched, so a name that later points inward is caught there.
// urlPolicy checks input addresses; private allows non-public hosts (tests and
// closed networks only, see Config.AllowPrivateURLs).
type urlPolicy struct{ private bool }

func (p urlPolicy) check(field, raw string) *apierr.Error {
	bad := func(reason string) *apierr.Error {
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidURL,
			fmt.Sprintf("%s %q is not usable: %s", field, raw, reason)).With("field", field).With("reason", reason)
	}
	if raw == "" {
		return bad("the address is empty")
	}
	if len(raw) > maxURL {
		return bad(fmt.Sprintf("longer than %d characters", maxURL))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a valid URL")
	}
	if u.Scheme != "https" {
		return bad("only https addresses are accepted")
	}
	if u.User != nil {
		return bad("credentials in the address are not accepted")
	}
	host := u.Hostname()
	if host == "" {
		return bad("the address has no host")
	}
	if p.private {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !publicIP(ip) {
			return bad("the address is not public")
		}
		return nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".internal") ||
		strings.HasSuffix(h, ".local") || !strings.Contains(h, ".") {
		return bad("the host is not a public name")
	}
	// No public name ends in a numeric label: "127.1", "0177.0.0.1" or "0x7f.1" are
	// addresses in forms that other resolvers (libc, FFmpeg) read as loopback.
	if tld := h[strings.LastIndexByte(h, '.')+1:]; strings.HasPrefix(tld, "0x") || strings.Trim(tld, "0123456789") == "" {
		return bad("the host is an address in a non-standard form")
	}
	return nil
}

// nonPublic are special-purpose ranges netip's predicates do not cover: shared
// address space (carrier NAT, and cloud metadata such as 100.100.100.200), IETF
// protocol assignments, benchmarking, reserved, and NAT64/6to4 prefixes that embed
// an IPv4 address which may be private.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
}

// publicIP reports whether ip is a public unicast address.
func publicIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

func modelError(id string, err error) *apierr.Error {
	var fe *models.FieldError
	switch {
	case errors.Is(err, models.ErrUnknownModel):
		return apierr.New(http.StatusBadRequest, apierr.CodeUnknownModel,
			fmt.Sprintf("unknown model %q; GET /v1/models lists the models", id)).
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
