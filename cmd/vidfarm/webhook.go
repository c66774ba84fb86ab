package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/textguard"
)

const webhookUsage = `usage: vidfarm webhook [--url URL] [--key KEY] [--json] <command>

  create --url U [--events a,b]
                               register an endpoint (events: video.completed, video.failed,
                               video.canceled, webhook.disabled; default the first two); prints it
                               and its signing secret, shown only this once. Sent once, never retried
  delete WHK                   delete an endpoint; its deliveries waiting for a retry are cancelled
  list                         the account's endpoints and their status
  deliveries WHK [--limit N] [--starting-after DELIVERY]
                               an endpoint's deliveries, newest first, with every attempt
  test WHK                     send a signed webhook.test event to the endpoint
  retry WHK DELIVERY           make a delivered or abandoned delivery pending again, due now; it keeps
                               its attempts and its retry schedule carries on from them (an abandoned
                               one gets one attempt); a pending delivery is answered unchanged
  rotate WHK                   a new signing secret, printed once; the old one signs beside it for 24 h
  enable WHK                   enable a disabled endpoint; what waited is sent

--url before the command is the API's address (create's own --url, after it, the endpoint's);
it defaults to $VIDFARM_URL, else http://127.0.0.1:8080 (a cluster's members may be given
together, comma-separated, as for vidfarm video); --key to $VIDFARM_API_KEY.
--json prints the API's answers as JSON; otherwise a summary for people.
`

// webhookCLI is one `vidfarm webhook` invocation.
type webhookCLI struct {
	c        *client.Client
	json     bool
	out, log io.Writer
}

func runWebhook(args []string) error {
	c, asJSON, rest, err := clientCommand("webhook", webhookUsage, args, false)
	if err != nil {
		return err
	}
	cli := &webhookCLI{c: c, json: asJSON, out: os.Stdout, log: os.Stderr}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.run(ctx, rest[0], rest[1:])
}

func (cli *webhookCLI) run(ctx context.Context, cmd string, args []string) error {
	sub := flag.NewFlagSet("webhook "+cmd, flag.ExitOnError)
	sub.BoolVar(&cli.json, "json", cli.json, "print JSON")
	limit := sub.Int("limit", 20, "deliveries: page size, 1 to 100")
	after := sub.String("starting-after", "", "deliveries: continue after this delivery id")
	hookURL := sub.String("url", "", "create: the endpoint's public https address")
	events := sub.String("events", "", "create: event types, comma-separated (default: video.completed,video.failed)")
	// Ids may come before or after the flags.
	var ids []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		ids, args = append(ids, args[0]), args[1:]
	}
	if err := sub.Parse(args); err != nil {
		return err
	}
	ids = append(ids, sub.Args()...)
	need := func(n int, what string) error {
		if len(ids) != n {
			return fmt.Errorf("webhook %s: give %s", cmd, what)
		}
		return nil
	}
	switch cmd {
	case "create":
		if err := need(0, "no id, only --url (and --events)"); err != nil {
			return err
		}
		if *hookURL == "" {
			return errors.New("webhook create: give --url, the endpoint's public https address")
		}
		req := client.CreateWebhookRequest{URL: *hookURL}
		for e := range strings.SplitSeq(*events, ",") {
			if e = strings.TrimSpace(e); e != "" {
				req.Events = append(req.Events, e)
			}
		}
		w, err := cli.c.CreateWebhook(ctx, req)
		if err != nil {
			return err
		}
		if cli.json {
			if err := printJSONTo(cli.out, w); err != nil {
				return err
			}
		} else {
			cli.printEndpoint(w)
			fmt.Fprintf(cli.out, "secret: %s\n", w.Secret)
		}
		fmt.Fprintln(cli.log, "the secret is shown only now, never again: store it to verify deliveries (a new one: vidfarm webhook rotate "+w.ID+")")
		return nil
	case "delete":
		if err := need(1, "the endpoint id (whk_…)"); err != nil {
			return err
		}
		d, err := cli.c.DeleteWebhook(ctx, ids[0])
		if err != nil || cli.json {
			return cli.print(d, err)
		}
		fmt.Fprintf(cli.out, "deleted %s\n", d.ID)
		return nil
	case "list":
		l, err := cli.c.ListWebhooks(ctx)
		if err != nil || cli.json {
			return cli.print(l, err)
		}
		if len(l.Data) == 0 {
			fmt.Fprintln(cli.log, "no webhook endpoints")
		}
		for _, w := range l.Data {
			cli.printEndpoint(&w)
		}
		return nil
	case "deliveries":
		if err := need(1, "the endpoint id (whk_…)"); err != nil {
			return err
		}
		l, err := cli.c.ListWebhookDeliveries(ctx, ids[0], client.ListDeliveriesParams{Limit: *limit, StartingAfter: *after})
		if err != nil || cli.json {
			return cli.print(l, err)
		}
		if len(l.Data) == 0 {
			fmt.Fprintln(cli.log, "no deliveries")
		}
		for _, d := range l.Data {
			cli.printDelivery(&d)
		}
		if l.HasMore {
			fmt.Fprintf(cli.log, "(more: --starting-after %s)\n", l.Data[len(l.Data)-1].ID)
		}
		return nil
	case "test":
		if err := need(1, "the endpoint id (whk_…)"); err != nil {
			return err
		}
		d, err := cli.c.TestWebhook(ctx, ids[0])
		if err != nil || cli.json {
			return cli.print(d, err)
		}
		cli.printDelivery(d)
		fmt.Fprintf(cli.log, "sent at once; see its attempts with: vidfarm webhook deliveries %s\n", ids[0])
		return nil
	case "retry":
		if err := need(2, "the endpoint id and the delivery id"); err != nil {
			return err
		}
		d, err := cli.c.RetryWebhookDelivery(ctx, ids[0], ids[1])
		if err != nil || cli.json {
			return cli.print(d, err)
		}
		cli.printDelivery(d)
		return nil
	case "rotate":
		if err := need(1, "the endpoint id (whk_…)"); err != nil {
			return err
		}
		w, err := cli.c.RotateWebhookSecret(ctx, ids[0])
		if err != nil || cli.json {
			return cli.print(w, err)
		}
		fmt.Fprintln(cli.out, w.Secret)
		if w.PreviousSecretExpiresAt != nil {
			fmt.Fprintf(cli.log, "the new secret is shown only now; the previous one also signs until %s\n",
				time.Unix(*w.PreviousSecretExpiresAt, 0).UTC().Format(time.DateTime))
		}
		return nil
	case "enable":
		if err := need(1, "the endpoint id (whk_…)"); err != nil {
			return err
		}
		w, err := cli.c.EnableWebhook(ctx, ids[0])
		if err != nil || cli.json {
			return cli.print(w, err)
		}
		cli.printEndpoint(w)
		return nil
	default:
		return fmt.Errorf("unknown command %q (create, delete, list, deliveries, test, retry, rotate, enable)", cmd)
	}
}

// print prints v as JSON, or returns err.
func (cli *webhookCLI) print(v any, err error) error {
	if err != nil {
		return err
	}
	return printJSONTo(cli.out, v)
}

func (cli *webhookCLI) printEndpoint(w *client.WebhookEndpoint) {
	fmt.Fprintln(cli.out, textguard.Printable(fmt.Sprintf("%s  %-8s  %s  %s", w.ID, w.Status, w.URL, strings.Join(w.Events, ","))))
}

// printDelivery prints a delivery and its last attempt.
func (cli *webhookCLI) printDelivery(d *client.WebhookDelivery) {
	attempts := "attempts"
	if len(d.Attempts) == 1 {
		attempts = "attempt"
	}
	line := fmt.Sprintf("%s  %-9s  %-16s  %d %s", d.ID, d.Status, d.EventType, len(d.Attempts), attempts)
	if n := len(d.Attempts); n > 0 {
		a := d.Attempts[n-1]
		status := "no answer"
		if a.ResponseStatus != nil {
			status = fmt.Sprint(*a.ResponseStatus)
		}
		line += fmt.Sprintf("  last: %s %s, %d ms", time.Unix(a.AttemptedAt, 0).UTC().Format(time.DateTime), status, a.LatencyMS)
		if a.Error != "" {
			line += "  (" + clip(a.Error, 60) + ")"
		}
	}
	if d.NextRetryAt != nil {
		line += "  next: " + time.Unix(*d.NextRetryAt, 0).UTC().Format(time.DateTime)
	}
	fmt.Fprintln(cli.out, textguard.Printable(line)) // an attempt's error is the receiver's words
}
