package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/bench"
	"github.com/vidfarm/vidfarm/controlplane/admin"
)

const benchUsage = `usage: vidfarm bench <command>

  create   closed-loop POST /v1/videos load against a live control plane
  etcd     the same closed loop of 1 KB puts against etcd, the anchor creates are compared with
  load     open-loop create-and-poll load against a live farm
  sim      discrete-event simulation of a farm on the real scheduler (-sweep: size a node group)
`

func runBench(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, benchUsage)
		return fmt.Errorf("no bench command given")
	}
	switch args[0] {
	case "create":
		return runBenchCreate(args[1:])
	case "etcd":
		return runBenchEtcd(args[1:])
	case "load":
		return runBenchLoad(args[1:])
	case "sim":
		return runBenchSim(args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(os.Stdout, benchUsage)
		return nil
	}
	fmt.Fprint(os.Stderr, benchUsage)
	return fmt.Errorf("unknown bench command %q", args[0])
}

func runBenchCreate(args []string) error {
	fs := flag.NewFlagSet("bench create", flag.ExitOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "public API base URL, or several separated by commas (the members of a cluster): the clients are spread over them")
	cl := &admin.Client{}
	adminServers(fs, cl, "admin-server", "admin API address (accounts for the run are created there)")
	fs.StringVar(&cl.Token, "admin-token", "", "admin token")
	accounts := fs.Int("accounts", 64, "accounts to spread the load over")
	concurrency := fs.Int("concurrency", 64, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	idem := fs.Bool("idempotency-keys", false, "send a new Idempotency-Key with every create, as a client that retries safely does (the server keeps a record per create)")
	follow := fs.Bool("follow-leader", true, "send a client's next creates to the leader once a follower's forwarded answer names it (X-Vidfarm-Leader) and it is one of --server's URLs; false: every client stays on its own server and the followers forward")
	promptChars := fs.Int("prompt-chars", 0, "the length of every create's prompt, 1 to 5000 characters (0: the default body's 52); a real prompt often runs to hundreds")
	if err := parse(fs, args); err != nil {
		return err
	}
	body, err := bench.CreateBody(*promptChars)
	if err != nil {
		return err
	}
	servers, err := bench.ParseEndpoints(*server)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	keys := make([]string, 0, *accounts)
	for i := 0; i < *accounts; i++ {
		a, err := cl.CreateAccount(ctx, fmt.Sprintf("bench-%d", i), "max", 1<<40)
		if err != nil {
			return fmt.Errorf("create bench account: %w", err)
		}
		keys = append(keys, a.APIKey)
	}
	fmt.Fprintf(os.Stderr, "bench create: %d clients over %d accounts for %s against %s\n", *concurrency, *accounts, *duration, *server)
	rep, err := bench.RunCreate(ctx, bench.CreateConfig{
		BaseURLs: servers, APIKeys: keys, Concurrency: *concurrency, Duration: *duration, IdempotencyKeys: *idem, Body: body, FollowLeader: *follow,
		Progress: func(done int64, el time.Duration) {
			fmt.Fprintf(os.Stderr, "\r  %5.1fs / %s  %8d created  %6.0f/s", el.Seconds(), *duration, done, float64(done)/el.Seconds())
		},
	})
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return err
	}
	return printReport(rep, *asJSON)
}

func runBenchEtcd(args []string) error {
	fs := flag.NewFlagSet("bench etcd", flag.ExitOnError)
	var cfg bench.EtcdConfig
	endpoint := fs.String("endpoint", "http://127.0.0.1:2379", "etcd client URL, or several separated by commas (every member's): the clients are spread over them")
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "concurrent clients")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to run")
	fs.IntVar(&cfg.ValueBytes, "value-bytes", 1024, "size of each put's value")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.Endpoints, err = bench.ParseEndpoints(*endpoint); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "bench etcd: %d clients putting %d bytes for %s against %s\n", cfg.Concurrency, cfg.ValueBytes, cfg.Duration, strings.Join(cfg.Endpoints, ","))
	cfg.Progress = bench.PutProgress(os.Stderr, cfg.Duration)
	rep, err := bench.RunEtcdPut(ctx, cfg)
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return err
	}
	return printReport(rep, *asJSON)
}

// printReport prints a closed-loop report as JSON or as a table.
func printReport(rep bench.CreateReport, asJSON bool) error { return rep.Write(os.Stdout, asJSON) }
