package agent

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/pipeline"
)

// Defaults of Config.
const (
	// DefaultVirtualGPUs is how many procedural render slots a node without
	// NVIDIA GPUs advertises when Config.Procedural is set.
	DefaultVirtualGPUs = 4
	// VirtualGPUMemoryGB is the memory each virtual GPU advertises: that of
	// the catalog's reference GPU, so every model's requirements fit.
	VirtualGPUMemoryGB = 80
	// VirtualGPUModel is the GPU kind a virtual GPU reports.
	VirtualGPUModel = "virtual"
	// DefaultTaskTimeout bounds one task's stage (a render, a composite):
	// a runner that hangs gives its GPUs back and the task fails, to be
	// retried elsewhere, instead of holding them forever.
	DefaultTaskTimeout = 6 * time.Hour
	// DefaultDrainTimeout is how long a stopping agent waits for its
	// running tasks before it cancels them and hands them back.
	DefaultDrainTimeout = 2 * time.Minute
	// DefaultRetryBackoff is the first pause after a failed call to the
	// control plane; it doubles on every further failure, up to maxBackoff.
	DefaultRetryBackoff = time.Second
)

// ErrConfig means a Config cannot be used. The message says why and names
// the vidfarm agent flag that sets the field ("--workers -1: ..."), which is
// what a user typed (or its VIDFARM_ variable); a field no flag sets
// (CPUSlots, Models) by its name; a runners file's mistake by file, line,
// entry and key (RunnersFileError).
var ErrConfig = errors.New("invalid agent configuration")

// Config configures Run. Server and Token are required; every other field
// has a default, noted on the field.
type Config struct {
	// Server is the base URL of the control plane's agent listener, e.g.
	// "https://cp.example.com:7443".
	Server string
	// Members are the agent listener URLs of a cluster's other members.
	// Given them, the agent sends its requests to the leader once a
	// follower names it, and to the next member (Server first, then these
	// as given) when the one it calls gives no answer, so it keeps its
	// leases through the loss of any one member (internal/members).
	Members []string
	// Token is the agent registration token the control plane was given.
	Token string
	// Name is the node's name at the control plane; registering under a
	// name that is taken replaces that node. Default: the hostname.
	Name string

	// WorkDir holds one directory per running task, removed when the task
	// ends. The directory belongs to this agent: leftover task directories
	// ("task-*") of earlier runs are removed at start. Default:
	// <os.TempDir()>/vidfarm-agent.
	WorkDir string
	// WorkDirMaxBytes bounds WorkDir: while it holds more than this, the
	// agent leases no new work (and logs why). 0 means no bound.
	WorkDirMaxBytes int64

	// Workers is how many tasks run at once, each worker holding at most
	// one lease. Default: CPUSlots plus the number of GPUs advertised.
	Workers int
	// CPUSlots is the number of CPU task slots advertised. Default:
	// runtime.NumCPU().
	CPUSlots int
	// Procedural makes a node on which NVML finds no GPU advertise
	// VirtualGPUs procedural render slots (virtual GPUs of
	// VirtualGPUMemoryGB each), so that the procedural runner takes GPU
	// tasks on the CPU. Without it such a node takes CPU tasks only.
	Procedural bool
	// VirtualGPUs is the number of virtual GPUs (see Procedural).
	// Default: DefaultVirtualGPUs.
	VirtualGPUs int

	// Runners maps a model id to its external runner (protocol
	// vidfarm.render.v1): the command (program and arguments, no shell) of
	// a pipeline.ExternalRunner, or a single http(s) URL of a model server
	// (pipeline.HTTPRunner), health-checked as an http runner of the runners
	// file with its defaults (DefaultRunnerHealthInterval,
	// DefaultRunnerUnhealthyAfter). Models without one render with the
	// procedural runner. See ParseRunners for the --runner flag's form.
	Runners map[string][]string
	// RunnerSpecs are the runners of a runners file (LoadRunnersFile),
	// merged with Runners; a model may have a runner in only one of them.
	// Kinds this build cannot drive yet (comfyui, openai-chat,
	// openai-speech) are refused with ErrConfig.
	RunnerSpecs []RunnerSpec
	// RunnerHTTPClient calls the model servers of URL runners. Default: no
	// overall timeout (renders are long; cancelling the task ends the
	// call), trusting ServerRootCAs when set, else the system's CAs.
	RunnerHTTPClient *http.Client
	// Models are the model ids the node can render. Default: every model
	// of the catalog (models.IDs()).
	Models []string

	// AllowPrivateInputs lets manual renders fetch input images from
	// loopback, private and link-local addresses. A development switch:
	// in production the API's image URLs must be public https addresses,
	// and the agent checks that again when it connects.
	AllowPrivateInputs bool
	// InputRootCAs, if set, are the certificate authorities trusted for
	// input image downloads instead of the system's (a private CA).
	InputRootCAs *x509.CertPool
	// ServerRootCAs, if set, are the certificate authorities trusted for
	// the control plane's agent listener instead of the system's (a farm
	// with its own CA). Ignored when HTTPClient is set.
	ServerRootCAs *x509.CertPool

	// TaskTimeout bounds each task's stage; past it the stage is cancelled
	// and the task reported failed. Default: DefaultTaskTimeout; negative:
	// no bound.
	TaskTimeout time.Duration
	// DrainTimeout is how long Run waits, once its context is done, for
	// running tasks to finish and report. Default: DefaultDrainTimeout.
	DrainTimeout time.Duration
	// StopNow, once closed while Run drains (or before), ends the drain at
	// once: the running tasks are cancelled and handed back, as at the end
	// of DrainTimeout. NotifyStop closes it at a second signal, which is
	// what the log line says. nil: the drain waits out DrainTimeout.
	StopNow <-chan struct{}
	// HeartbeatInterval overrides the control plane's heartbeat_seconds;
	// 0 uses the control plane's.
	HeartbeatInterval time.Duration
	// RetryBackoff is the first pause after a failed control-plane call.
	// Default: DefaultRetryBackoff.
	RetryBackoff time.Duration

	// Tools drives ffmpeg, ffprobe and espeak-ng. Default: &pipeline.Tools{}.
	Tools *pipeline.Tools
	// Logger receives the agent's structured logs. Default: slog.Default().
	Logger *slog.Logger
	// HTTPClient talks to the control plane. It must not have a Timeout
	// shorter than the lease long-poll (20 s); the agent bounds every call
	// with its own deadline. Default: a client with no overall timeout.
	HTTPClient *http.Client
	// Discover reads the machine's capacity. Default: DiscoverSystem.
	Discover func() (Capacity, error)
	// Metrics, when set, gets the agent's Prometheus metrics (metrics.go).
	Metrics prometheus.Registerer
	// SampleGPUs reads the GPUs for the metrics at scrape time. Default:
	// SampleGPUs (NVML).
	SampleGPUs func() ([]GPU, error)

	runners []RunnerSpec // RunnerSpecs and Runners, merged by withDefaults
	// flagHealthInterval is the health_interval of the http runners of
	// Runners; 0: DefaultRunnerHealthInterval. Tests shorten it.
	flagHealthInterval time.Duration
}

// withDefaults checks c and fills in the defaults that need no discovery.
func (c Config) withDefaults() (Config, error) {
	if c.Server == "" {
		return c, fmt.Errorf("%w: --server (the control plane's agent listener URL) is required", ErrConfig)
	}
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("%w: --server %q: want an http or https URL such as https://cp.example.com:7443", ErrConfig, c.Server)
	}
	c.Server = strings.TrimRight(c.Server, "/")
	c.Members = slices.Clone(c.Members)
	for i, m := range c.Members {
		u, err := url.Parse(m)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Members are the --server list after its first URL.
			return c, fmt.Errorf("%w: --server: member %q: want an http or https URL such as https://cp2.example.com:7443", ErrConfig, m)
		}
		c.Members[i] = strings.TrimRight(m, "/")
	}
	if c.Token == "" {
		return c, fmt.Errorf("%w: --token (the agent registration token) is required", ErrConfig)
	}
	if c.WorkDir == "" {
		c.WorkDir = filepath.Join(os.TempDir(), "vidfarm-agent")
	}
	if c.WorkDir, err = filepath.Abs(c.WorkDir); err != nil {
		return c, fmt.Errorf("%w: --work-dir: %w", ErrConfig, err)
	}
	switch {
	case c.WorkDirMaxBytes < 0:
		return c, fmt.Errorf("%w: --work-dir-max-bytes %d: want 0 (no bound) or more", ErrConfig, c.WorkDirMaxBytes)
	case c.Workers < 0:
		return c, fmt.Errorf("%w: --workers %d: want 0 (default) or more", ErrConfig, c.Workers)
	case c.CPUSlots < 0:
		return c, fmt.Errorf("%w: CPUSlots %d: want 0 (default) or more", ErrConfig, c.CPUSlots)
	case c.VirtualGPUs < 0 || c.VirtualGPUs > 64:
		return c, fmt.Errorf("%w: --virtual-gpus %d: want 0 to 64", ErrConfig, c.VirtualGPUs)
	case c.DrainTimeout < 0:
		return c, fmt.Errorf("%w: --drain-timeout %v: want 0 or more", ErrConfig, c.DrainTimeout)
	}
	if c.CPUSlots == 0 {
		c.CPUSlots = runtime.NumCPU()
	}
	if c.VirtualGPUs == 0 {
		c.VirtualGPUs = DefaultVirtualGPUs
	}
	if c.TaskTimeout == 0 {
		c.TaskTimeout = DefaultTaskTimeout
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.Models == nil {
		c.Models = models.IDs()
	}
	c.Models = slices.Clone(c.Models)
	for _, id := range c.Models {
		if _, ok := models.Get(id); !ok {
			return c, fmt.Errorf("%w: Models: %q is not a catalog model", ErrConfig, id)
		}
	}
	runners := make(map[string][]string, len(c.Runners))
	for id, argv := range c.Runners {
		if _, ok := models.Get(id); !ok {
			return c, fmt.Errorf("%w: --runner: model %q is not a catalog model (see GET /v1/models)", ErrConfig, id)
		}
		if len(argv) == 0 || argv[0] == "" {
			return c, fmt.Errorf("%w: --runner: model %q has no command", ErrConfig, id)
		}
		if err := checkRunner(argv); err != nil {
			return c, fmt.Errorf("%w: --runner: model %q: %w", ErrConfig, id, err)
		}
		if !pipeline.IsRunnerURL(argv[0]) {
			// A program that is not there would fail every task of the
			// model the node advertises: refused at start instead.
			if _, err := exec.LookPath(argv[0]); err != nil {
				return c, fmt.Errorf("%w: --runner: model %q: runner program %q: %w", ErrConfig, id, argv[0], err)
			}
		}
		runners[id] = slices.Clone(argv)
	}
	c.Runners = runners
	if c.runners, err = mergeRunners(c.RunnerSpecs, c.Runners, cmp.Or(c.flagHealthInterval, DefaultRunnerHealthInterval)); err != nil {
		return c, err
	}
	if c.Tools == nil {
		c.Tools = &pipeline.Tools{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 128 // one long poll per worker
		if c.ServerRootCAs != nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.ServerRootCAs}
		}
		c.HTTPClient = &http.Client{Transport: tr}
	}
	if c.RunnerHTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if c.ServerRootCAs != nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.ServerRootCAs}
		}
		c.RunnerHTTPClient = &http.Client{Transport: tr}
	}
	if c.Discover == nil {
		c.Discover = DiscoverSystem
	}
	if c.SampleGPUs == nil {
		c.SampleGPUs = SampleGPUs
	}
	return c, nil
}

// runnerURL returns the model server's URL of a URL runner (one http(s)
// URL, as checkRunner admits them); false for a command.
func runnerURL(argv []string) (string, bool) {
	if len(argv) == 1 && pipeline.IsRunnerURL(argv[0]) {
		return argv[0], true
	}
	return "", false
}

// checkRunner rejects a runner that starts like a URL but is not one
// alone: a URL runner takes no arguments, and a typo in it would otherwise
// be run as a program.
func checkRunner(argv []string) error {
	first := strings.ToLower(argv[0])
	if !strings.HasPrefix(first, "http://") && !strings.HasPrefix(first, "https://") {
		return nil
	}
	if !pipeline.IsRunnerURL(argv[0]) {
		return fmt.Errorf("%q is not a usable http(s) URL (scheme and host needed)", pipeline.RedactURL(argv[0]))
	}
	if len(argv) > 1 {
		return fmt.Errorf("a URL runner takes no arguments, got %q", argv[1:])
	}
	return nil
}

// shownRunner is a runner spec for an error message: a URL runner's
// password, which a model server behind basic auth may take in its URL, is
// written as xxxxx, since errors end in logs.
func shownRunner(model string, argv []string) string {
	shown := slices.Clone(argv)
	shown[0] = pipeline.RedactURL(shown[0])
	return model + "=" + strings.Join(shown, " ")
}

// ParseRunners parses "MODEL=COMMAND" and "MODEL=URL" specs, the form of
// the agent's --runner flag, into Config.Runners. COMMAND is split at white
// space into the program and its arguments (no shell, no quoting); URL is
// an http(s) address of a model server. One spec may hold several runners
// separated by ";", the form of VIDFARM_RUNNER. A model named twice is an
// error.
func ParseRunners(specs ...string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, spec := range specs {
		for part := range strings.SplitSeq(spec, ";") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			model, command, ok := strings.Cut(part, "=")
			model = strings.TrimSpace(model)
			argv := strings.Fields(command)
			if !ok || model == "" || len(argv) == 0 {
				return nil, fmt.Errorf("%w: --runner %q: want MODEL=COMMAND, e.g. wan-2.2-a14b=/opt/runners/wan.sh --fast", ErrConfig, part)
			}
			if err := checkRunner(argv); err != nil {
				return nil, fmt.Errorf("%w: --runner %q: %w", ErrConfig, shownRunner(model, argv), err)
			}
			if _, dup := out[model]; dup {
				return nil, fmt.Errorf("%w: --runner: model %q given twice", ErrConfig, model)
			}
			out[model] = argv
		}
	}
	return out, nil
}
