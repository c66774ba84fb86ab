package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/vidfarm/vidfarm/client"
	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

// The examples run against a test server that follows the documented API; in
// a program the base URL is the farm's (http://127.0.0.1:8080 for vidfarm dev)
// and the key one from `vidfarm admin key create`.

func Example() {
	_, srv := startFake()
	defer srv.Close()
	c, err := client.New(srv.URL, fakeKey, client.WithPollInterval(time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	v, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "A product tour of a solar lantern", DurationSeconds: 15})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.ID, v.Status, v.CreditsCharged)
	final, err := c.Wait(ctx, v.ID, func(v client.Video) {
		if v.Progress != nil {
			fmt.Printf("%s %s %d%%\n", v.Status, v.Progress.Stage, v.Progress.Percent)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Status, final.VideoURL)
	// Output:
	// vid_1 queued 30
	// processing rendering 50%
	// completed https://files.example/vid_1.mp4
}

func ExampleIsCode() {
	_, srv := startFake()
	defer srv.Close()
	c, _ := client.New(srv.URL, fakeKey)
	_, err := c.CreateAuto(context.Background(), client.AutoVideoRequest{Prompt: "A feature film", DurationSeconds: 3000})
	if client.IsCode(err, client.CodeInsufficientCredits) {
		var e *client.Error
		errors.As(err, &e)
		fmt.Println(e.Status, e.Details["required_credits"], e.Details["remaining_credits"])
	}
	// Output:
	// 402 6000 1000
}

func ExampleClient_Videos() {
	_, srv := startFake()
	defer srv.Close()
	c, _ := client.New(srv.URL, fakeKey)
	ctx := context.Background()
	for _, p := range []string{"one", "two", "three"} {
		if _, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: p}); err != nil {
			log.Fatal(err)
		}
	}
	// Pages of two: the iterator follows starting_after while has_more.
	for v, err := range c.Videos(ctx, client.ListVideosParams{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.ID, v.Prompt)
	}
	// Output:
	// vid_3 three
	// vid_2 two
	// vid_1 one
}

func ExampleClient_CreateManual_idempotencyKey() {
	_, srv := startFake()
	defer srv.Close()
	c, _ := client.New(srv.URL, fakeKey)
	ctx := context.Background()
	req := client.ManualVideoRequest{Prompt: "A fox in the snow", Model: "seedance-1.0-lite", Resolution: "480p"}
	// A key of the caller's makes the create safe to repeat from another process.
	a, _ := c.CreateManual(ctx, req, client.WithIdempotencyKey("order-42"))
	b, _ := c.CreateManual(ctx, req, client.WithIdempotencyKey("order-42"))
	fmt.Println(a.ID, b.ID)
	// Output:
	// vid_1 vid_1
}

func ExampleClient_CancelVideo() {
	_, srv := startFake()
	defer srv.Close()
	c, _ := client.New(srv.URL, fakeKey)
	ctx := context.Background()
	v, _ := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "Never mind", DurationSeconds: 10})
	v, err := c.CancelVideo(ctx, v.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Status, v.Cancellation.CreditsRefunded)
	// Output:
	// canceled 20
}

func ExampleVerifyWebhook() {
	secret := "whsec_example"
	body := []byte(`{"id":"evt_1","object":"event","type":"video.completed","created":1763700000,"data":{"video":{"id":"vid_1"}}}`)
	at := time.Unix(1763700000, 0)
	// What the control plane sends in Service-Signature.
	header := signature.Header(secret, at, body)
	// In a webhook handler: body is the raw request body. Decode it only after
	// it verifies (VerifyWebhookRequest does both steps on an *http.Request).
	if err := client.VerifyWebhook(secret, header, body, at.Add(time.Minute), 0); err == nil {
		var ev client.Event
		_ = json.Unmarshal(body, &ev)
		fmt.Println("verified", ev.Type, ev.Data.Video.ID)
	}
	err := client.VerifyWebhook(secret, header, append(body, ' '), at, 0)
	fmt.Println(errors.Is(err, client.ErrSignatureMismatch))
	// Output:
	// verified video.completed vid_1
	// true
}

// Reading the account's event log: every event, oldest first, page after
// page. Keep the last id to read only what came since, later.
func ExampleClient_Events() {
	_, srv := startFake()
	defer srv.Close()
	c, err := client.New(srv.URL, fakeKey)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, prompt := range []string{"A lantern at dusk", "A lantern at dawn"} {
		if _, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: prompt}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := c.CancelVideo(ctx, "vid_1"); err != nil {
		log.Fatal(err)
	}
	last := ""
	for e, err := range c.Events(ctx, client.ListEventsParams{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.ID, e.Type, e.Data.Video.ID)
		last = e.ID
	}
	// Later: only what came since the last event read.
	if _, err := c.GetVideo(ctx, "vid_2"); err != nil { // it starts rendering
		log.Fatal(err)
	}
	for e, err := range c.Events(ctx, client.ListEventsParams{After: last}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.ID, e.Type, e.Data.Video.ID)
	}
	// Output:
	// evt_1 video.created vid_1
	// evt_2 video.created vid_2
	// evt_3 video.canceled vid_1
	// evt_4 video.processing vid_2
}
