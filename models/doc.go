// Package models is vidfarm's catalog of video models and everything that
// depends on a model: which manual requests it accepts, what they cost, and
// what rendering them needs.
//
// It owns:
//
//   - the catalog of exactly 32 models served by GET /v1/models (All, Get,
//     IDs). Every read returns a deep copy: callers may keep and modify what
//     they get without touching the catalog, which never changes after
//     package initialisation and is safe for concurrent use;
//   - validation of manual-mode POST /v1/videos requests (Validate), which
//     fills in defaults and prices the request;
//   - pricing: Model.Credits for manual mode (credits_per_second of the
//     resolution, times the duration) and AutoCredits for auto mode (3 credits
//     per started 5 seconds);
//   - what each model needs to run (Model.Requirements), for the pure
//     scheduler and the farm simulator.
//
// The package imports the standard library only.
//
// # Catalog
//
// Models are grouped in families (kling, vidu, veo, wan, hailuo, seedance,
// runway, luma, pixverse, ltx, hunyuan, mochi, cogvideox, sora). Within a
// model, resolutions are listed from lowest to highest (480p, 540p, 720p,
// 1080p, 4k) and a higher resolution always costs more credits per second and
// more GPU time; durations are whole seconds in ascending order. A model
// without styles has an empty, non-nil Styles (JSON "styles": []), and a model
// that accepts no advanced fields has an empty, non-nil Parameters.
//
// Requirements are estimates for vidfarm's reference GPU, an 80 GB H100:
// GPUMemoryGB is the memory needed on each of the GPUCount GPUs of one render
// (never more than 80), and GPUSecondsPerOutputSecond is the total GPU time,
// summed over all GPUCount GPUs, per second of output video. A render of d
// seconds therefore holds GPUCount GPUs for about
// GPUSecondsPerOutputSecond[res] * d / GPUCount seconds of wall time
// (Model.GPUSeconds gives the total). Models whose weights are not public are
// sized like open models of similar quality; vidfarm renders them with its
// procedural runner or through an external runner.
//
// # Manual requests
//
// Validate takes a ManualRequest whose JSON types the API layer has already
// checked, and whose Operation it has inferred (an empty Operation means
// text_to_video). Resolution and AspectRatio left nil, and DurationSeconds
// left 0, take the model's defaults; a sent "" resolution or aspect ratio is
// refused like any other value the model does not offer. Validate returns an error wrapping
// ErrUnknownModel for an unknown model id, and otherwise a *FieldError for the
// first field that fails, checked in this order:
//
//  1. operation: reported on the request field that selected it: "model" for
//     text_to_video, "image_url", "first_frame_url" or "image_urls";
//     Allowed lists the model's operations;
//  2. resolution, Allowed lists the model's resolutions;
//  3. duration_seconds, Allowed lists the durations as decimal strings;
//  4. aspect_ratio, Allowed lists the model's aspect ratios;
//  5. image_urls (multiple_images only): between 1 and Model.MaxImages
//     images, Allowed is ["1..MaxImages"];
//  6. the advanced fields, in this order: negative_prompt, seed,
//     generate_audio, style, movement_amplitude, cfg_scale, camera_fixed,
//     auto_fix.
//
// ImageCount is ignored for operations other than multiple_images.
//
// # Advanced fields
//
// The contract leaves the advanced manual fields open; vidfarm's rules are
// below. Every model lists the fields it accepts in Model.Parameters, and
// Validate checks a request against exactly that list, so GET /v1/models
// documents what Validate enforces. A field the model does not accept is a
// FieldError on that field whose Allowed lists the names of the fields the
// model does accept (possibly none); style is the exception, see below.
//
//   - negative_prompt (string): at most 2500 characters (Unicode code points),
//     may be empty. What the render should avoid.
//   - seed (integer): 0 to 2147483647. The same seed and inputs give the same
//     video where the model is deterministic.
//   - generate_audio (boolean): models that can render a synchronised
//     soundtrack (veo 3, kling 2.6, wan 2.5, seedance 1.5, pixverse v5,
//     ltx 2). Models that always render sound (sora) and silent models do
//     not accept it.
//   - style (string): one of the model's Styles; a model with no styles does
//     not accept the field. Allowed lists the styles, also (empty) for a
//     model with none, whose message says it takes no style.
//   - movement_amplitude (string): vidu models only; one of auto, small,
//     medium, large.
//   - cfg_scale (number): kling models only; 0 to 1 inclusive (how closely the
//     render follows the prompt). Allowed for a value out of range is
//     ["0..1"].
//   - camera_fixed (boolean): seedance models only; keeps the camera still.
//   - auto_fix (boolean): families with a prompt optimiser (veo, wan, hailuo,
//     hunyuan); lets the model rewrite the prompt before rendering.
//
// A numeric value out of range has Allowed ["min..max"]; a string that is too
// long has Allowed ["0..2500"] (the accepted length).
package models
