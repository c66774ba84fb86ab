// Package pipeline holds vidfarm's render stages and the tools they drive.
// An agent runs one stage per task and moves the files between them through
// the blob store; nothing here talks to the control plane.
//
//	manual: Runner.Render (GPU task "render") → Tools.Finalize ("finalize")
//	auto:   NewPlan ("plan") → Tools.Narrate ("tts") and one Runner.Render
//	        per scene ("scene") → Tools.Composite ("composite")
//	free preview: Tools.PreviewStill
//
// # Tools
//
// Every external program runs through an Executor (OSExecutor in
// production, a recording fake in unit tests) so the exact arguments of
// each stage are tested; integration tests run the real binaries. The
// programs are ffmpeg and ffprobe (every encode, overlay, concat, mix and
// still) and espeak-ng (speech). A Tools value says where they are and how
// to encode (x264 preset and CRF); its zero value uses PATH. A missing
// program gives an error wrapping ErrToolMissing that says what to install;
// a program that fails gives a *ToolError (ErrToolFailed) with the tail of
// its stderr; bad input gives ErrInvalidRequest with the field and what is
// allowed. Cancelling the context kills the program's whole process group
// and returns the context's cause; the program's exit ends the run, and
// what it left running in its process group is killed (OSExecutor).
//
// Stages report progress through a ProgressFunc as whole, increasing
// percentages; 100 comes only after the outputs have been checked.
//
// # plan: the script writer
//
// A Planner writes the Plan. Where a node has a language model server
// (runner kind openai-chat), ChatPlanner asks it for the script with
// structured output and checks the answer against the rules below (see
// ChatPlanner and README.md). Without one, DeterministicPlanner runs
// NewPlan, a deterministic writer: the same prompt, duration and options
// always give the same Plan. It
//
//   - splits the prompt into sentences (at . ! ? … and line breaks), drops a
//     request preamble such as "Create a video about", and cuts sentences of
//     more than 24 words into lines at commas;
//   - sizes the narration for the duration at 150 words per minute, using at
//     most 80% of the time (espeak-ng speaks at 160, so lines fit with
//     pauses); prompt sentences are kept in order while they fit, the first
//     one that does not is cut at a clause boundary, the rest is dropped;
//   - when the prompt fills less than 70% of that budget, adds stock
//     sentences ("Let's take a closer look at …") about the prompt's key
//     words (longer, noun-like words that are not stopwords);
//   - groups the lines into scenes of about 8 seconds (at least 2 s and one
//     line each), with whole-second durations in proportion to their words
//     that add up to exactly the requested duration and leave each scene
//     time for its estimated speech;
//   - gives each scene a visual description: a shot type and its subject,
//     which is the prompt the scene's render gets.
//
// Its limits, plainly: it does not understand the prompt. It never invents
// facts or a story; a short prompt stretched over a long video gives
// repetitive narration built from the same key words; the key-word and
// sentence heuristics are tuned for English and count words by spaces, so
// languages written without spaces get poorly sized narration; a long
// prompt is cut, not summarised. ChatPlanner replaces it behind the same
// Plan type.
//
// # tts
//
// Tools.Synthesize speaks text with an espeak-ng voice into a WAV file and
// returns its length measured from the WAV header (WAVDuration).
// Tools.ListVoices lists the voices behind GET /v1/voices: each installed
// espeak-ng language ("en-us") and its combination with the classic
// variants f1–f5 and m1–m8 ("en-us+f3"), about 1,800 with espeak-ng 1.51; see Voice for
// how the ids are made and why they are stable. Tools.Narrate speaks every
// line of a Plan. A SpeechServer speaks through an OpenAI-compatible
// /v1/audio/speech server (runner kind openai-speech) with the voices its
// configuration lists; a SpeechRouter sends each voice id to its server or
// to espeak-ng, and Narrate takes any such Speaker.
//
// # Runners
//
// A Runner turns a RenderRequest (model, operation, prompt, seed, style,
// resolution, aspect ratio, duration, fps, input images, advanced fields)
// into an MP4 clip. FrameSize turns resolution and aspect ratio into pixels:
// the resolution names the shorter side (1080p is 1920x1080 at 16:9 and
// 1080x1920 at 9:16; 4k is 3840x2160), the longer side is rounded to an even
// number. Router picks a runner per model id.
//
// ProceduralRunner is built in. It renders any catalog model on the CPU
// with ffmpeg and no model weights, so a farm works end to end without
// GPUs. It is not a video model and does not depict the prompt: the clip is
// an abstract animation whose every parameter comes from a hash of the
// request (model, operation, prompt, negative prompt, style, seed), so the
// same request gives the same clip and a different seed a different one.
//
//   - text_to_video: a slowly turning three-colour gradient with three soft
//     discs or rings drifting on Lissajous paths and a gentle hue drift.
//     Colour and mood words in the prompt ("red", "ocean", "night", "neon")
//     steer the palette; colour words in the negative prompt steer it away.
//     Drawn at up to 360 lines and scaled up, so even 4k is quick.
//   - image_to_video: the image, cropped to the frame, with a slow push-in,
//     pull-out or pan.
//   - first_last_frame: holds the first image, morphs (crossfade or
//     dissolve) into the last over the middle half, holds the last.
//   - multiple_images: each image in turn with short transitions.
//   - style changes the look by key word: anime (posterised colour), comic
//     (ink edges), clay, 3d_animation, cyberpunk (scan lines), cinematic
//     (letterbox, vignette), realistic (film grain), pixel, watercolor, noir.
//   - movement_amplitude scales the motion, camera_fixed stops zoom and pan,
//     generate_audio adds a soft two-note tone; cfg_scale and auto_fix have
//     no visible effect.
//
// The frame size (but see Intermediate below), frame rate and duration are
// exact (duration to the frame).
//
// A request marked Intermediate (an auto video's scene, which the composite
// scales and encodes again) is encoded with x264 ultrafast at CRF 17
// instead of the delivery settings: the same frames in under a third of the
// encoding time. A text_to_video one also stays at the size it is drawn at
// (at most 360 lines) when its style draws nothing at the output size: the
// composite's bicubic scale then makes the picture the runner would have
// made, from a quarter of the pixels to encode, move and decode.
//
// ExternalRunner plugs a real model server in: a command per model that
// reads the request as JSON on stdin, prints "progress N" lines and writes
// the clip to the request's output_path. HTTPRunner speaks the same
// protocol to a model server's URL: a multipart POST of the request and
// its images, answered by the clip or by progress lines and then the clip.
// README.md documents the protocol with an example script and server.
//
// # composite and finalize
//
// Tools.Composite builds an auto video in one encoding pass: the scene clips
// cut together at the orientation's frame size (landscape 16:9, portrait
// 9:16), a lower-third bar in the brand colour with an accent line, the
// presenter (a stock avatar drawn by WriteStockAvatar, or the account's
// picture) above it, the brand logo top right, the narration mixed at the
// times PlaceLines gives, and captions cut from each line and timed by its
// measured length (CaptionCues). It writes video.mp4 (captions burned in),
// video_no_captions.mp4, captions.srt and captions.vtt (go-astisub). The
// narration is encoded once and copied into the clean video.
//
// Tools.Finalize turns a manual render's clip into the delivered MP4
// (H.264, yuv420p, AAC, faststart; streams already in those codecs are
// copied) and a poster still. Probe reads duration, size and streams with
// ffprobe.
package pipeline
