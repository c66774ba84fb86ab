package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vidfarm/vidfarm/agent"
	cpserver "github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/controlplane/tlsconf"
	"github.com/vidfarm/vidfarm/internal/members"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, "; ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ExitOnError)
	printCapacity := fs.Bool("print-capacity", false, "print the GPUs (NVML), CPU, memory and tools of this node and exit")
	asJSON := fs.Bool("json", false, "with --print-capacity: print JSON")
	server := fs.String("server", "", "URL of the control plane's agent listener, e.g. https://cp.example.com:7443, or every member's agent listener separated by commas: the agent follows the leader among them and goes on to the next when one gives no answer")
	token := fs.String("token", "", "agent registration token")
	caFile := fs.String("ca-file", "", "PEM CA bundle to trust for the control plane's https agent listener (default: the system's CAs)")
	name := fs.String("name", "", "node name at the control plane (default: the hostname)")
	workDir := fs.String("work-dir", "", "directory for task files (default: <tmp>/vidfarm-agent), one per agent: locked while the agent runs; leftover task-* directories in it are removed at start")
	workDirMax := fs.Int64("work-dir-max-bytes", 0, "lease no new work while the work dir holds more than this many bytes (0: no bound)")
	workers := fs.Int("workers", 0, "tasks run at once (default: CPU slots + GPUs)")
	virtualGPUs := fs.Int("virtual-gpus", agent.DefaultVirtualGPUs, "on a machine without NVIDIA GPUs, advertise this many procedural render slots (0: take CPU tasks only)")
	var runners stringList
	fs.Var(&runners, "runner", fmt.Sprintf("MODEL=COMMAND or MODEL=URL: render MODEL with an external runner, a command (split at spaces, no shell) or a model server's http(s) URL "+
		"(vidfarm.render.v1 over HTTP; health-checked as a runners file's http runner: a GET of URL every %s, any answer below 500 is up, "+
		"MODEL is withdrawn after %d failed checks in a row); repeatable, or ';'-separated in the environment variable",
		agent.DefaultRunnerHealthInterval, agent.DefaultRunnerUnhealthyAfter))
	runnersFile := fs.String("runners", "", "YAML file of the node's runners: Cog containers and external runners per model (deploy/runners.example.yaml); checked at start, every mistake reported; --runner adds to it")
	allowPrivate := fs.Bool("allow-private-inputs", false, "development only: fetch input images from loopback and private addresses")
	drainTimeout := fs.Duration("drain-timeout", agent.DefaultDrainTimeout, "on SIGTERM or Ctrl-C, how long running tasks may finish before they are handed back; a second SIGTERM or Ctrl-C hands them back at once")
	taskTimeout := fs.Duration("task-timeout", agent.DefaultTaskTimeout, "stop a task's stage (a render, a composite) that runs longer than this and report it failed (0: no limit)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	metricsListen := fs.String("metrics-listen", "", "serve Prometheus metrics (tasks, GPUs, work dir) at http://ADDR/metrics, e.g. 127.0.0.1:9102 (default: off)")
	if err := parse(fs, args); err != nil {
		return err
	}

	if *printCapacity {
		c, err := agent.DiscoverSystem()
		if perr := agent.PrintCapacity(os.Stdout, c, *asJSON); perr != nil {
			return perr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "vidfarm agent: some GPU details could not be read: %v\n", err)
		}
		return nil
	}

	log, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	runnerMap, err := agent.ParseRunners(runners...)
	if err != nil {
		return err
	}
	var runnerSpecs []agent.RunnerSpec
	if *runnersFile != "" {
		if runnerSpecs, err = agent.LoadRunnersFile(*runnersFile); err != nil {
			return err
		}
	}
	var serverCAs *x509.CertPool
	if *caFile != "" {
		if serverCAs, err = tlsconf.CAPool(*caFile); err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
	}
	var metrics prometheus.Registerer // nil: no metrics (a nil *Registry would not do)
	if *metricsListen != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		stopMetrics, err := serveMetrics(*metricsListen, reg, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
		metrics = reg
	}
	servers := members.Split(*server)
	ctx, stopNow, stop := agent.NotifyStop(os.Interrupt, syscall.SIGTERM)
	defer stop()
	return agent.Run(ctx, agent.Config{
		Metrics:            metrics,
		Server:             servers[0],
		Members:            servers[1:],
		Token:              *token,
		Name:               *name,
		WorkDir:            *workDir,
		WorkDirMaxBytes:    *workDirMax,
		Workers:            *workers,
		Procedural:         *virtualGPUs > 0,
		VirtualGPUs:        *virtualGPUs,
		Runners:            runnerMap,
		RunnerSpecs:        runnerSpecs,
		AllowPrivateInputs: *allowPrivate,
		ServerRootCAs:      serverCAs,
		DrainTimeout:       noWaitIfZero(*drainTimeout),
		StopNow:            stopNow,
		TaskTimeout:        noLimitIfZero(*taskTimeout),
		Logger:             log,
	})
}

// serveMetrics serves reg at http://addr/metrics until the returned stop.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Only GETs of a small page: whole-request timeouts fit every route here,
	// with the control plane's values for ordinary requests.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: cpserver.DefaultHeaderTimeout,
		ReadTimeout: cpserver.DefaultBodyTimeout, WriteTimeout: cpserver.DefaultWriteTimeout, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { _ = srv.Close() }, nil
}

// noWaitIfZero maps the flag's 0 ("no wait") to the shortest wait (0 in
// Config means the default); a negative one stays, for Config to refuse.
func noWaitIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return time.Nanosecond
	}
	return d
}

// noLimitIfZero maps a flag's 0 ("no limit") to Config's negative (0 there
// means the default).
func noLimitIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
