package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/sealed"
	"github.com/vidfarm/vidfarm/controlplane/server"
)

const testSecretsKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// TestWebhookSecretSealed: with --secrets-key the replicated state and its
// snapshots hold the signing secret sealed, deliveries are signed with the
// secret the client was shown, and a node restarted without the key says
// it cannot sign instead of sending unsigned or wrongly signed events.
func TestWebhookSecretSealed(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock), func(c *server.Config) { c.SecretsKey = testSecretsKey })
	acct, key := h.account("pro", 1000)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	_, secret := h.registerWebhook(key, rc.srv.URL+"/hook")

	hooks := h.srv.Node.FSM.Webhooks(acct)
	if len(hooks) != 1 || !sealed.IsSealed(hooks[0].Secret) || strings.Contains(hooks[0].Secret, secret) {
		t.Fatalf("stored secret %q: want it sealed", hooks[0].Secret)
	}
	var backup bytes.Buffer
	if _, err := h.admin.Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	if backup.Len() == 0 || bytes.Contains(backup.Bytes(), []byte(secret)) {
		t.Fatalf("the backup (%d bytes) holds the signing secret in the clear", backup.Len())
	}
	h.failedVideo(key)
	checkSigned(t, rc.waitFor(1)[0], secret, clock.Now())

	// The same data directory on a node without the key: the attempt fails
	// and says why; nothing reaches the receiver.
	h.cfg.SecretsKey = ""
	h.restart()
	vid := h.failedVideo(key)
	eventually(t, func() bool {
		ds := h.deliveriesOf(fsm.EventID(vid))
		return len(ds) == 1 && len(ds[0].Attempts) == 1
	}, "the attempt without the key to be recorded")
	d := h.deliveriesOf(fsm.EventID(vid))[0]
	if !strings.Contains(d.Attempts[0].Error, "no secrets key") {
		t.Fatalf("attempt without the key: %+v", d.Attempts[0])
	}
	if n := len(rc.deliveries()); n != 1 {
		t.Fatalf("the receiver got %d requests, want only the first", n)
	}
}

// TestWebhookSecretsResealed: setting a key on a farm whose secrets are
// plain seals them; putting a new key ahead of it seals them again with
// the new one, after which the old key can go and deliveries still carry
// the signature the client's secret verifies.
func TestWebhookSecretsResealed(t *testing.T) {
	clock := newFakeClock()
	h := start(t, withWebhooks(clock))
	acct, key := h.account("pro", 1000)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	id, secret := h.registerWebhook(key, rc.srv.URL+"/hook")
	stored := func() string { return h.srv.Node.FSM.Webhooks(acct)[0].Secret }
	if stored() != secret {
		t.Fatal("without a key the secret should be kept as it is")
	}
	newKey := strings.Repeat("cd", 32)
	for _, step := range []struct{ key, current string }{
		{testSecretsKey, testSecretsKey},        // plain → sealed
		{newKey + "," + testSecretsKey, newKey}, // old seal → new seal
	} {
		h.cfg.SecretsKey = step.key
		h.restart()
		current, err := sealed.ParseKey(step.current)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, func() bool { return sealed.IsSealed(stored()) && current.Current(stored(), id) },
			"the secret to be sealed with the current key")
	}
	h.cfg.SecretsKey = newKey
	h.restart()
	h.failedVideo(key)
	checkSigned(t, rc.waitFor(1)[0], secret, clock.Now())
}
