package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
)

// cliRun runs `vidfarm args…` with env and returns its stdout, its stderr
// and how it ended.
func cliRun(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(vidfarmBinary(t), args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// `vidfarm webhook create` and `delete` against `vidfarm dev`: the secret
// create prints signs the endpoint's deliveries; a deleted endpoint is gone
// and deleting it again fails.
func TestWebhookCreateDeleteCLIAgainstDev(t *testing.T) {
	f := startDevFarm(t, 0, "--dev-allow-private-webhooks")
	rc := &hookReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	env := []string{"VIDFARM_URL=" + f.public, "VIDFARM_API_KEY=" + f.apiKey}
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := cliRun(t, env, append([]string{"webhook"}, args...)...)
		if err != nil {
			t.Fatalf("vidfarm webhook %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
		}
		return out, errOut
	}

	out, errOut := run("create", "--url", srv.URL+"/hook", "--events", "video.completed, webhook.disabled")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "whk_") || !strings.HasSuffix(lines[0], "enabled   "+srv.URL+"/hook  video.completed,webhook.disabled") ||
		!strings.HasPrefix(lines[1], "secret: whsec_") {
		t.Fatalf("create printed %q", out)
	}
	if !strings.Contains(errOut, "shown only now") {
		t.Fatalf("create did not say the secret is shown once: %q", errOut)
	}
	id, _, _ := strings.Cut(lines[0], " ")
	secret := strings.TrimPrefix(lines[1], "secret: ")

	run("test", id)
	eventually(t, 30*time.Second, "the receiver to get the test event", func() bool { return len(rc.requests()) >= 1 })
	got := rc.requests()[0]
	if err := client.VerifyWebhook(secret, got.header, got.body, time.Now(), 0); err != nil || got.event.Data.Webhook.ID != id {
		t.Fatalf("the test event of %s with the printed secret: %v (%s)", id, err, got.body)
	}

	out, errOut = run("create", "--url", srv.URL+"/other", "--json")
	var w client.WebhookEndpoint
	if err := json.Unmarshal([]byte(out), &w); err != nil || !strings.HasPrefix(w.Secret, "whsec_") || w.Secret == secret ||
		!slices.Equal(w.Events, []string{client.EventVideoCompleted, client.EventVideoFailed}) || !strings.Contains(errOut, "shown only now") {
		t.Fatalf("create --json: %q %q (%v)", out, errOut, err)
	}

	if out, _ := run("delete", id); out != "deleted "+id+"\n" {
		t.Fatalf("delete printed %q", out)
	}
	var d client.WebhookDeleted
	if out, _ := run("delete", w.ID, "--json"); json.Unmarshal([]byte(out), &d) != nil || !d.Deleted || d.ID != w.ID {
		t.Fatalf("delete --json printed %q", out)
	}
	if out, _ := run("list"); strings.Contains(out, id) || strings.Contains(out, w.ID) {
		t.Fatalf("list after the deletes: %q", out)
	}
	if _, errOut, err := cliRun(t, env, "webhook", "delete", id); err == nil || !strings.Contains(errOut, "not_found") {
		t.Fatalf("deleting a deleted endpoint: %v %q", err, errOut)
	}
	if _, errOut, err := cliRun(t, env, "webhook", "create"); err == nil || !strings.Contains(errOut, "--url") {
		t.Fatalf("create without --url: %v %q", err, errOut)
	}
}

// `vidfarm video render` against `vidfarm dev`: refused while the account is
// free, then the preview queued and charged nothing, the same video when
// asked again.
func TestVideoRenderCLIAgainstDev(t *testing.T) {
	f := startDevFarm(t, 0)
	ctx := context.Background()
	acct, err := f.admin.CreateAccount(ctx, "free", "free", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(f.public, acct.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	preview, err := c.CreateAuto(ctx, client.AutoVideoRequest{Prompt: "a lighthouse at dusk", DurationSeconds: 10})
	if err != nil || preview.Status != client.StatusPreview {
		t.Fatalf("free project: %+v (%v)", preview, err)
	}
	env := []string{"VIDFARM_URL=" + f.public, "VIDFARM_API_KEY=" + acct.APIKey}

	if _, errOut, err := cliRun(t, env, "video", "render", preview.ID); err == nil || !strings.Contains(errOut, "upgrade_required") {
		t.Fatalf("render while free: %v %q", err, errOut)
	}
	if _, err := f.admin.SetPlan(ctx, acct.AccountID, "pro"); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := cliRun(t, env, "video", "render", preview.ID, "--json")
	var v client.Video
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.ID != preview.ID || v.Status != client.StatusQueued || v.CreditsCharged != 0 {
		t.Fatalf("render after the upgrade: %v %q %q", err, out, errOut)
	}
	out, errOut, err = cliRun(t, env, "video", "render", preview.ID)
	if err != nil || !strings.HasPrefix(out, preview.ID+"  ") || !strings.Contains(out, " 0 credits ") {
		t.Fatalf("render again: %v %q %q", err, out, errOut)
	}
}
