// Package agent is vidfarm's node daemon, the program a GPU node operator runs
// as "vidfarm agent" on each machine of the farm.
//
// It owns:
//
//   - discovery: what the machine offers to the farm (Capacity), read from
//     NVML for the GPUs and from the operating system for the host
//     (Discover, DiscoverSystem, PrintCapacity for "--print-capacity"), and
//     its wire form (SchedulerGPUs; virtual GPUs for procedural nodes);
//   - the daemon (Run, Config): registration with the control plane,
//     heartbeats, the long-poll lease of tasks, running the pipeline stage
//     of each task, input downloads, uploads to the blob store, progress,
//     complete and fail reports, and draining on shutdown.
//
// It speaks only the agent protocol of scheduler/wire (see that package for
// the endpoints) and never imports controlplane internals. README.md has a
// picture of the daemon's goroutines and the life of one task.
//
// # The daemon
//
// Run first takes the work dir's lock (a flock on Config.WorkDir's
// agent.lock): a second agent on the same work dir is refused
// (ErrWorkDirInUse, naming the holder's pid), since it would end the first
// one's runners as leftovers and take its node credential. It registers
// with Config.Token, retrying with backoff until the control plane answers
// (a 400, 401 or 403 to the registration is final:
// ErrRegistrationRefused; so is a 404 in the control plane's error format,
// which means the address is one of its other listeners:
// ErrNotAgentListener), and keeps the credential it gets. The
// registration carries the voices of the node's espeak-ng
// (Config.Tools.ListVoices, listed once at start; none when discovery finds
// no espeak-ng or it cannot list them): the control plane serves their union
// over the farm's nodes as GET /v1/voices and checks voice_id against it.
// A heartbeat goroutine reports every held lease with its percent every
// heartbeat_seconds (Config.HeartbeatInterval overrides); a lease the answer
// calls stale, or that a progress or report call answers 409 stale_lease to,
// cancels its task, whose result is discarded: no complete or fail is sent.
// A task whose report is already under way is left to that report's answer:
// the report itself may be what ended the lease.
// A 401 on any call means the control plane forgot the node: the agent
// registers again and drops its running tasks, whose leases went with the
// old credential.
//
// Config.Workers workers (default: CPU slots plus GPUs) each long-poll
// POST /agent/v1/lease?wait=20 and run one task at a time under a
// per-task context, in a fresh directory "task-*" of Config.WorkDir that is
// removed when the task ends; leftovers of earlier runs are removed at
// start. While the work dir holds more than Config.WorkDirMaxBytes no worker
// leases, and the log says so. Progress goes out at most once a second
// (ProgressInterval) and in every heartbeat. Blob transfers and complete
// and fail reports are retried on transient errors, a few times at least
// and then for as long as the task's lease may still be valid (the agent
// counts it from its grant and from each heartbeat the control plane
// answered); a fail carries the error on one line of at most 600
// characters (a longer one keeps the start of its first line and its end).
//
// When Run's context ends (SIGTERM) the agent drains: no more leasing, a
// heartbeat with Draining true, up to Config.DrainTimeout for running tasks
// to finish and report, then the rest are cancelled (reporting nothing) and
// POST /agent/v1/deregister hands their leases back without counting a
// failure. Config.StopNow (NotifyStop: a second SIGTERM or Ctrl-C) ends
// the wait at once. Every log line about a task carries task_id, video_id and kind.
//
// # Tasks
//
// Artifacts are uploaded to "videos/<video id>/<task name>/<file>" and
// listed in the complete report (file name → key); inputs are the
// Assignment.Inputs of earlier tasks ("<task>/<file>" → key).
//
//   - plan: the openai-chat runner of stage plan (pipeline.ChatPlanner), else
//     pipeline.DeterministicPlanner → plan.json; reports Scenes.
//   - tts: plan.json → pipeline.Narrate with the video's voice (default
//     pipeline.DefaultVoice) through the node's SpeechRouter (a voice of an
//     openai-speech runner goes to its server, any other to espeak-ng) →
//     line-NNN.wav per spoken line and lines.json (the SpokenLines, each
//     Audio the name of its WAV).
//   - scene-NNNN: scene N (from 1) of plan.json rendered from its Visual
//     for its duration, at the video's resolution (default 720p), 16:9 or
//     9:16 by orientation, with a seed derived from the video id and N, by
//     the runner of the model the task was placed for (Assignment.Model) → clip.mp4.
//     With file assets (wire.Video.AssetInputs) scene N animates asset N
//     (cycling) as image_to_video instead.
//   - composite: plan.json, lines.json and its WAVs, every scene's clip.mp4
//     and the presenter: the account's own avatar when the assignment
//     carries its picture (wire.InputAvatar), else the stock avatar (the
//     video's or pipeline.DefaultAvatar); with a runner of stage avatar, the
//     presenter is its lip-synced clip of that picture and the narration
//     (Tools.NarrationTrack) → Tools.Composite →
//     video.mp4, video_no_captions.mp4, captions.srt, captions.vtt; reports
//     DurationSeconds measured with ffprobe. With a brand kit
//     (wire.Video.Brand) the bar and accent take its colours and its logo
//     (an asset input, or a logo_url fetched like an input image) goes top
//     right; a logo that cannot be had fails the task.
//   - render (manual): the input images (image_url, first and last frame,
//     or image_urls) are downloaded, then the model's runner renders with
//     the request's operation, prompt, negative prompt, seed, style,
//     resolution, aspect ratio, duration and advanced fields → clip.mp4.
//   - finalize: render/clip.mp4 → Tools.Finalize → video.mp4 and
//     poster.jpg; reports DurationSeconds.
//   - avatar (a job, Assignment.Avatar): kind prompt → pipeline.WritePromptAvatar;
//     kind photo → the photo at file_url, fetched like a manual input image
//     (public https only, every connection checked again) →
//     Tools.NormalizeAvatarPhoto → avatar.png (512×512).
//   - speech (a job, Assignment.Speech): Tools.SpeakWith the node's
//     SpeechRouter and the sample's voice → speech.m4a (AAC); reports
//     DurationSeconds.
//
// Runners: Config.RunnerSpecs (a runners file, LoadRunnersFile) and
// Config.Runners (--runner) name a runner per model: a Cog container
// (pipeline.CogRunner), a ComfyUI server (pipeline.ComfyUIRunner), a
// command (pipeline.ExternalRunner, which sees only its lease's GPUs
// through CUDA_VISIBLE_DEVICES) or a model server's URL
// (pipeline.HTTPRunner, told the lease's GPUs in gpu_ids); and the stages
// plan (openai-chat), tts (openai-speech) and avatar (cog, comfyui) to
// model servers (runners_kinds.go, stages_runners.go). A runner with a
// health check (Cog, ComfyUI, and http, of the runners file or --runner) is part of
// the node's capacity: its models are advertised only while it answers
// (health.go). Every configured runner's clip is held to the request
// (pipeline.Tools.CheckClip) before it is uploaded. Every other model renders with
// pipeline.ProceduralRunner, which is not a video model. A machine on which
// NVML finds no GPU advertises, with Config.Procedural, Config.VirtualGPUs
// virtual GPUs of 80 GB (wire.Capacity.Virtual) so the procedural runner
// takes GPU tasks there, and says loudly that real models cannot run on it.
//
// Input images are fetched over https only, at most MaxInputImageBytes,
// within InputFetchTimeout, with no proxy, and must sniff as PNG, JPEG,
// WebP, GIF or BMP. Addresses follow the farm's one address policy, package
// netguard, the same the control plane's API applied when it took them: the
// URL (and every redirect) is checked before the request, and the dialer
// refuses loopback, private, link-local, carrier-grade NAT, metadata and
// every other address netguard.Blocked refuses at connect time, so a name
// that resolves somewhere else by then (DNS rebinding) is still refused;
// Config.AllowPrivateInputs lifts that for development and is logged loudly.
//
// # Discovery
//
// Discover takes an nvml.Interface (github.com/NVIDIA/go-nvml/pkg/nvml), so
// tests drive it with go-nvml's mocks; DiscoverSystem uses nvml.New(), the
// real libnvidia-ml.so.1. One discovery is one Init, the queries, and one
// Shutdown. It reports per GPU: index, name, UUID, total and free memory (MiB,
// like nvidia-smi), utilisation, MIG mode and the MIG instances; per host: the
// driver and CUDA driver versions, hostname, CPU cores, RAM, and which of the
// tools the pipeline drives (ffmpeg, ffprobe, espeak-ng) are on PATH; an
// ffmpeg that lacks a filter or encoder the pipeline uses
// (pipeline.Tools.CheckFFmpeg) is found but carries a Problem and is not
// advertised.
//
// Discovery always returns a usable Capacity. Its error lists what could not
// be read; each part wraps the nvml.Return behind it, so errors.Is(err,
// nvml.ERROR_GPU_IS_LOST) works, and the same text is in Capacity.Warnings so
// it reaches the control plane and --print-capacity. A GPU whose UUID, memory
// or MIG layout could not be read carries an Error and must not be offered
// for work. What the hardware simply does not do is not an error: a GPU that
// answers ERROR_NOT_SUPPORTED for utilisation (utilisation is then null) or
// for MIG (MIG is then off) is reported with everything else that is known.
//
// # Without a driver
//
// go-nvml opens libnvidia-ml.so.1 with dlopen inside Init, so a binary built
// with it starts on any machine. Without the library Init returns
// ERROR_LIBRARY_NOT_FOUND; with the library but no kernel driver it returns
// ERROR_DRIVER_NOT_LOADED. Both make the machine a CPU node: NvidiaDriver is
// false, GPUs is empty, Note says why, and the error is nil, since this is a
// normal configuration. Any other Init failure (no permission, library and
// driver versions that do not match) also gives a CPU node, but returns an
// error wrapping ErrNVMLInit so the operator sees the misconfiguration.
//
// After a failed Init no other NVML function may be called, Shutdown
// included: go-nvml links its C symbols unresolved and binds them lazily, so
// a call into a library that never loaded does not return an error or panic,
// the dynamic loader ends the process ("symbol lookup error: undefined
// symbol: nvmlShutdown", exit status 127). Discover therefore calls Shutdown
// only after Init succeeded.
//
// go-nvml needs cgo. A binary built with CGO_ENABLED=0 still has
// DiscoverSystem, which then reports a CPU node with a note saying so;
// Discover exists only in cgo builds.
package agent
