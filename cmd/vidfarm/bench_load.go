package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/bench"
)

// runBenchLoad is `vidfarm bench load`: open-loop creates against a live
// farm, each video polled to its end, and the report.
func runBenchLoad(args []string) error {
	fs := flag.NewFlagSet("bench load", flag.ExitOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "public API base URL")
	keys := fs.String("api-key", "", "API key; several, comma-separated, are used in turn")
	rate := fs.Float64("rate", 1, "creates per second (open loop: sent on schedule whatever the answers)")
	duration := fs.Duration("duration", time.Minute, "how long to send")
	body := fs.String("body", "", "POST /v1/videos body as JSON, or @FILE (default: a 5 s auto video)")
	poll := fs.Duration("poll", 0, "interval between polls of one video (default: the poll_interval_seconds the API answers)")
	drain := fs.Duration("drain", 10*time.Minute, "how long after the last send to keep polling unfinished videos")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var cfg bench.LoadConfig
	fs.StringVar(&cfg.WebhookListen, "webhook-listen", "", "start a webhook receiver on ADDR (e.g. 127.0.0.1:9090), register it for the run and time video.completed deliveries; a local receiver needs the farm's --dev-allow-private-webhooks")
	fs.StringVar(&cfg.WebhookURL, "webhook-url", "", "base URL the farm reaches the receiver at (default http://<webhook-listen>)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg.BaseURL, cfg.Rate, cfg.Duration, cfg.PollInterval, cfg.Drain = *server, *rate, *duration, *poll, *drain
	for _, k := range strings.Split(*keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			cfg.APIKeys = append(cfg.APIKeys, k)
		}
	}
	if len(cfg.APIKeys) == 0 {
		return fmt.Errorf("bench load: -api-key is required (`vidfarm dev` prints one)")
	}
	switch {
	case strings.HasPrefix(*body, "@"):
		b, err := os.ReadFile((*body)[1:])
		if err != nil {
			return err
		}
		cfg.Body = b
	case *body != "":
		cfg.Body = []byte(*body)
	}
	if err := cfg.Check(); err != nil { // before the plan is printed
		return fmt.Errorf("bench load: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	total := int64(*rate * duration.Seconds())
	fmt.Fprintf(os.Stderr, "bench load: %d creates at %.2f/s over %s against %s\n", total, *rate, *duration, *server)
	sending := newProgress("sending", total)
	var rendering *progress
	toldWebhooks := false
	cfg.Progress = func(p bench.LoadProgress) {
		if rendering == nil {
			sending.set(int64(p.Sent))
			if p.Elapsed < *duration {
				return
			}
			sending.finish()
			rendering = newProgress(fmt.Sprintf("waiting for %d accepted videos", p.Accepted), int64(p.Accepted))
		}
		rendering.set(int64(p.Accepted - p.InProgress))
		if p.InProgress == 0 && p.AwaitingWebhooks > 0 && !toldWebhooks {
			toldWebhooks = true
			fmt.Fprintf(os.Stderr, "waiting for the webhook events of %d videos (up to --drain)\n", p.AwaitingWebhooks)
		}
	}
	rep, err := bench.RunLoad(ctx, cfg)
	if rendering != nil {
		rendering.finish()
	} else {
		sending.finish()
	}
	interrupted := errors.Is(err, context.Canceled)
	if interrupted {
		fmt.Fprintln(os.Stderr, "bench load: interrupted; the report covers what was measured so far")
		err = nil
	} else if err != nil {
		return err
	}
	if *asJSON {
		err = writeJSON(rep)
	} else {
		fmt.Print(rep.String())
	}
	if err == nil && !interrupted && rep.Sent > 0 && rep.Accepted == 0 {
		// A run in which the farm took nothing measured nothing: scripts
		// must not read it as a result.
		return fmt.Errorf("bench load: none of the %d creates was accepted (see rejected)", rep.Sent)
	}
	return err
}
