package pipeline

import (
	"sync"
)

// Tools is the set of external programs the stages drive, and how they are
// run. The zero value is ready to use: programs are looked up on PATH and run
// with OSExecutor. A Tools must not be copied after first use (it caches the
// voice list); share a *Tools between goroutines freely.
type Tools struct {
	Exec     Executor // nil: OSExecutor{}
	FFmpeg   string   // "": "ffmpeg"
	FFprobe  string   // "": "ffprobe"
	EspeakNG string   // "": "espeak-ng"

	// Preset is the libx264 preset for every encode ("" = "veryfast")
	// except intermediate clips (RenderRequest.Intermediate), which are
	// always encoded with "ultrafast". Tests use "ultrafast".
	Preset string
	// CRF is the libx264 constant rate factor (0 = 21); intermediate clips
	// get 17, or CRF where that is lower.
	CRF int

	voicesMu  sync.Mutex
	voices    []Voice           // cached ListVoices result
	voiceArgs map[string]string // voice id → espeak-ng -v argument
}

func (t *Tools) exec() Executor {
	if t.Exec == nil {
		return OSExecutor{}
	}
	return t.Exec
}

func (t *Tools) ffmpegBin() string  { return orDefault(t.FFmpeg, "ffmpeg") }
func (t *Tools) ffprobeBin() string { return orDefault(t.FFprobe, "ffprobe") }
func (t *Tools) espeakBin() string  { return orDefault(t.EspeakNG, "espeak-ng") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
