package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/internal/members"
	"github.com/vidfarm/vidfarm/textguard"
)

const videoUsage = `usage: vidfarm video [--url URL] [--key KEY] [--json] [--poll-interval D] <command>

  create --prompt P [--mode auto|manual] [--duration S] [--name N] [--idempotency-key K] [--wait]
         auto:   [--orientation landscape|portrait] [--voice V]
         manual: [--model M] [--resolution R] [--aspect-ratio A]
  get ID
  list [--status S] [--limit N] [--all]
  cancel ID
  render ID [--wait]           render a free account's preview once the account is on Pro or Max
                               (queued, charged nothing; again: the video as it stands)
  watch ID                     (follow a video until it is final, with its stage and percent,
                                from its events stream; polling while the stream cannot be had)

--url defaults to $VIDFARM_URL, else http://127.0.0.1:8080; --key to $VIDFARM_API_KEY.
A cluster's members may be given together, comma-separated: calls go to the first, to the
leader once a member names it, and to the next member when one gives no answer.
--json prints the API's answers as JSON; otherwise a summary for people.
`

// videoCLI is one `vidfarm video` invocation: flags in, SDK calls, output out.
type videoCLI struct {
	c        *client.Client
	json     bool
	out, log io.Writer // answers; progress and hints
}

func runVideo(args []string) error {
	c, asJSON, rest, err := clientCommand("video", videoUsage, args, true)
	if err != nil {
		return err
	}
	cli := &videoCLI{c: c, json: asJSON, out: os.Stdout, log: os.Stderr}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.run(ctx, rest[0], rest[1:])
}

// clientCommand parses the flags every API client command (video, webhook)
// shares, --url, --key and --json, and --poll-interval where the command
// follows videos (waits), and makes the SDK client; rest holds at least the
// command's name.
func clientCommand(name, usage string, args []string, waits bool) (*client.Client, bool, []string, error) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	baseURL := fs.String("url", envOr("VIDFARM_URL", client.DefaultBaseURL), "API address, or a cluster's members separated by commas [$VIDFARM_URL]")
	// The key is read from the environment after parsing, not given as the
	// flag's default: -h prints defaults, and the key is a secret (admin's
	// token is kept out of -h the same way).
	key := fs.String("key", "", "API key [$VIDFARM_API_KEY]")
	var poll *time.Duration
	if waits {
		poll = fs.Duration("poll-interval", 0, "how often --wait and watch read the video while its events stream cannot be had (default: the video's poll_interval_seconds)")
	}
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return nil, false, nil, err
	}
	keySet := false
	fs.Visit(func(f *flag.Flag) { keySet = keySet || f.Name == "key" })
	if !keySet {
		*key = os.Getenv("VIDFARM_API_KEY")
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return nil, false, nil, errors.New("no command given")
	}
	opts := []client.Option{client.WithUserAgent("vidfarm-cli")}
	if poll != nil && *poll > 0 {
		opts = append(opts, client.WithPollInterval(*poll))
	}
	if waits {
		// A wait rides out a server that is away (a restart, an election);
		// saying so tells a watcher why nothing moves.
		opts = append(opts, client.WithWaitRetry(func(err error, next time.Duration) {
			fmt.Fprintf(os.Stderr, "vidfarm %s: %v; reading the video again in %s\n", name, err, next)
		}))
	}
	urls := members.Split(*baseURL)
	if len(urls) > 1 {
		opts = append(opts, client.WithMembers(urls[1:]...))
	}
	c, err := client.New(urls[0], *key, opts...)
	if err != nil {
		return nil, false, nil, err
	}
	return c, *asJSON, rest, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (cli *videoCLI) run(ctx context.Context, cmd string, args []string) error {
	sub := flag.NewFlagSet("video "+cmd, flag.ExitOnError)
	sub.BoolVar(&cli.json, "json", cli.json, "print JSON")
	var auto client.AutoVideoRequest
	var manual client.ManualVideoRequest
	mode := sub.String("mode", "auto", "auto (a narrated video from a prompt) or manual (one model render)")
	prompt := sub.String("prompt", "", "what the video shows")
	duration := sub.Int("duration", 0, "length in seconds (default: the server's)")
	name := sub.String("name", "", "a name for the video")
	idemKey := sub.String("idempotency-key", "", "Idempotency-Key of the create (default: a random one, reused on retries)")
	wait := sub.Bool("wait", false, "create, render: follow the video until it is final")
	sub.StringVar(&auto.Orientation, "orientation", "", "auto: landscape or portrait")
	sub.StringVar(&auto.VoiceID, "voice", "", "auto: voice id (vidfarm's GET /v1/voices)")
	sub.StringVar(&manual.Model, "model", "", "manual: model id (GET /v1/models)")
	sub.StringVar(&manual.Resolution, "resolution", "", "manual: e.g. 480p, 720p")
	sub.StringVar(&manual.AspectRatio, "aspect-ratio", "", "manual: e.g. 16:9")
	status := sub.String("status", "", "list: only videos in this status")
	limit := sub.Int("limit", 20, "list: page size, 1 to 100")
	all := sub.Bool("all", false, "list: every page, not only the first")
	// The id may come before or after the flags: `get vid_1 --json` and `get --json vid_1`.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := sub.Parse(args); err != nil {
		return err
	}
	if id == "" && sub.NArg() > 0 {
		id = sub.Arg(0)
	}
	needID := func() error {
		if id == "" {
			return fmt.Errorf("video %s: give the video id (vid_…)", cmd)
		}
		return nil
	}
	switch cmd {
	case "create":
		var opts []client.CallOption
		if *idemKey != "" {
			opts = append(opts, client.WithIdempotencyKey(*idemKey))
		}
		var v *client.Video
		var err error
		switch *mode {
		case "auto":
			auto.Prompt, auto.DurationSeconds, auto.Name = *prompt, *duration, *name
			v, err = cli.c.CreateAuto(ctx, auto, opts...)
		case "manual":
			manual.Prompt, manual.DurationSeconds, manual.Name = *prompt, *duration, *name
			v, err = cli.c.CreateManual(ctx, manual, opts...)
		default:
			return fmt.Errorf("video create: --mode %q: use auto or manual", *mode)
		}
		if err != nil {
			return err
		}
		// With the client's own key a replay is only a retry of this
		// command's own create; with the user's, the video is an old one.
		if v.Replayed && *idemKey != "" {
			fmt.Fprintf(cli.log, "%s was made earlier with Idempotency-Key %s: nothing new was created or charged\n", textguard.Printable(v.ID), *idemKey)
		}
		if !*wait {
			return cli.printVideo(v)
		}
		if !v.Replayed || *idemKey == "" {
			fmt.Fprintf(cli.log, "created %s (%d credits)\n", textguard.Printable(v.ID), v.CreditsCharged)
		}
		return cli.watch(ctx, v.ID)
	case "get":
		if err := needID(); err != nil {
			return err
		}
		v, err := cli.c.GetVideo(ctx, id)
		if err != nil {
			return err
		}
		return cli.printVideo(v)
	case "cancel":
		if err := needID(); err != nil {
			return err
		}
		v, err := cli.c.CancelVideo(ctx, id)
		if err != nil {
			return err
		}
		return cli.printVideo(v)
	case "render":
		if err := needID(); err != nil {
			return err
		}
		v, err := cli.c.RenderVideo(ctx, id)
		if err != nil {
			return err
		}
		if !*wait || v.Final() {
			return cli.printVideo(v)
		}
		fmt.Fprintf(cli.log, "rendering %s (%d credits)\n", textguard.Printable(v.ID), v.CreditsCharged)
		return cli.watch(ctx, v.ID)
	case "watch":
		if err := needID(); err != nil {
			return err
		}
		return cli.watch(ctx, id)
	case "list":
		return cli.list(ctx, client.ListVideosParams{Status: *status, Limit: *limit}, *all)
	default:
		return fmt.Errorf("unknown command %q (create, get, list, cancel, render, watch)", cmd)
	}
}

// watch follows a video to its end, then prints it. A video that did not
// complete is an error, so scripts see a non-zero exit.
func (cli *videoCLI) watch(ctx context.Context, id string) error {
	p := newVideoProgress(cli.log)
	v, err := cli.c.Wait(ctx, id, p.update)
	p.finish()
	if err != nil {
		return err
	}
	if err := cli.printVideo(v); err != nil {
		return err
	}
	switch v.Status {
	case client.StatusFailed:
		return fmt.Errorf("video %s failed: %s", textguard.Printable(v.ID), textguard.Printable(v.Error.Message))
	case client.StatusCanceled:
		return fmt.Errorf("video %s was canceled", textguard.Printable(v.ID))
	}
	return nil
}

func (cli *videoCLI) list(ctx context.Context, p client.ListVideosParams, all bool) error {
	var vs []client.Video
	if all {
		for v, err := range cli.c.Videos(ctx, p) {
			if err != nil {
				return err
			}
			vs = append(vs, v)
		}
	} else {
		page, err := cli.c.ListVideos(ctx, p)
		if err != nil {
			return err
		}
		if cli.json {
			return cli.printJSON(page)
		}
		vs = page.Data
		if page.HasMore {
			defer fmt.Fprintf(cli.log, "(%d of %d; --all for every page)\n", page.Count, page.Total)
		}
	}
	if cli.json {
		return cli.printJSON(client.List[client.Video]{Object: "list", Data: vs, Count: len(vs), Total: len(vs)})
	}
	if len(vs) == 0 {
		fmt.Fprintln(cli.log, "no videos")
	}
	for _, v := range vs {
		fmt.Fprintf(cli.out, "%s  %-10s  %-6s  %s  %s\n", textguard.Printable(v.ID), textguard.Printable(v.Status), textguard.Printable(v.Mode),
			time.Unix(v.CreatedAt, 0).UTC().Format(time.DateTime), listLabel(v))
	}
	return nil
}

func (cli *videoCLI) printJSON(v any) error { return printJSONTo(cli.out, v) }

// printJSONTo prints v as indented JSON, as the client commands' --json does.
func printJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printVideo prints the fields a person looks at, by status.
func (cli *videoCLI) printVideo(v *client.Video) error {
	if cli.json {
		return cli.printJSON(v)
	}
	// %q already writes the prompt's control characters visibly.
	fmt.Fprintf(cli.out, "%s  %s  %s  %d credits  %q\n", textguard.Printable(v.ID), textguard.Printable(v.Status), textguard.Printable(v.Mode),
		v.CreditsCharged, clip(v.Prompt, 60))
	if v.Name != "" {
		fmt.Fprintf(cli.out, "  name: %s\n", textguard.Printable(v.Name))
	}
	switch {
	case v.Progress != nil:
		fmt.Fprintf(cli.out, "  %s\n", progressText(v))
	case v.VideoURL != "":
		fmt.Fprintln(cli.out, textguard.Printable(v.VideoURL))
	case v.Error != nil:
		fmt.Fprintf(cli.out, "  error: %s (credits refunded: %t)\n", textguard.Printable(v.Error.Message), v.Error.CreditsRefunded)
	case v.Cancellation != nil:
		fmt.Fprintf(cli.out, "  %d credits refunded\n", v.Cancellation.CreditsRefunded)
	case v.Preview != nil:
		fmt.Fprintf(cli.out, "  preview: %s\n  %s\n", textguard.Printable(v.Preview.ImageURL), textguard.Printable(v.Preview.Message))
	}
	return nil
}

// listLabel is what a list row says a video is: its name, which its owner
// chose to tell videos apart, else the start of its prompt, quoted so the
// two cannot be mistaken for each other.
func listLabel(v client.Video) string {
	if v.Name != "" {
		return clip(textguard.Printable(v.Name), 50)
	}
	return strconv.Quote(clip(v.Prompt, 48))
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
