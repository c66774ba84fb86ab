package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
)

// TestE2ECLIAcrossMembers: a render agent and `vidfarm video`, each given a
// three-node cluster's members with the leader's URL first, go on through
// the others when the leader is SIGKILLed. The CLI creates a video through
// a follower before the kill; after it, a CLI whose first URL is the dead
// leader still reads and creates (its first attempt is refused and the next
// member answers, forwarding to the new leader), and the agent, whose calls
// went straight to the leader, moves on too and renders both videos.
func TestE2ECLIAcrossMembers(t *testing.T) {
	c := newChaosCluster(t, 3)
	c.startAll()
	leader := c.waitLeader(30*time.Second, c.nodes...)
	a, b := (leader+1)%3, (leader+2)%3
	acct, err := c.nodes[leader].adminClient().CreateAccount(context.Background(), "members", "pro", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	agentURLs := c.nodes[leader].agentURL() + "," + c.nodes[a].agentURL() + "," + c.nodes[b].agentURL()
	startProc(t, "agent", []string{"agent", "--server", agentURLs, "--token", e2eAgentToken, "--name", "members-agent",
		"--virtual-gpus", "1", "--work-dir", filepath.Join(c.dir, "agent"), "--log-level", "info"}, nil, "agent running")
	run := func(urls []int, args ...string) (client.Video, error) {
		t.Helper()
		var list []string
		for _, i := range urls {
			list = append(list, c.nodes[i].publicURL())
		}
		full := append([]string{"video", "--url", strings.Join(list, ","), "--json"}, args...)
		cmd := exec.Command(vidfarmBinary(t), full...)
		cmd.Env = []string{"VIDFARM_API_KEY=" + acct.APIKey}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Logf("vidfarm %s: %v\nstderr: %s", strings.Join(full, " "), err, errb.String())
			return client.Video{}, err
		}
		var v client.Video
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("vidfarm %s printed no video (%v): %s", strings.Join(full, " "), err, out.String())
		}
		return v, nil
	}
	create := []string{"create", "--mode", "manual", "--model", e2eModel, "--resolution", e2eResolution,
		"--aspect-ratio", e2eAspect, "--duration", "5", "--prompt", "a fox in the snow"}
	first, err := run([]int{a, leader, b}, create...)
	if err != nil {
		t.Fatal(err)
	}
	c.kill(leader)
	c.waitLeader(30*time.Second, c.nodes[a], c.nodes[b])
	dead := []int{leader, a, b}
	got, err := run(dead, "get", first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != first.ID || got.Status == client.StatusFailed {
		t.Fatalf("get through the survivors: %s %s, want %s, not failed", got.ID, got.Status, first.ID)
	}
	second, err := run(dead, create...)
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == "" || second.ID == first.ID || second.Status == client.StatusFailed {
		t.Fatalf("create through the survivors: %+v", second)
	}
	// Without the members the dead leader's URL is all the CLI has.
	if _, err := run([]int{leader}, "get", first.ID); err == nil {
		t.Fatal("a CLI given only the dead leader's URL got an answer")
	}
	// The admin CLI likewise: a grant (a write: sent on only because the
	// dead member refused the connection) and a read through the survivors.
	adm := func(urls []int, args ...string) (string, error) {
		var list []string
		for _, i := range urls {
			list = append(list, c.nodes[i].adminURL())
		}
		full := append([]string{"admin", "--server", strings.Join(list, ","), "--admin-token", e2eAdminToken}, args...)
		out, err := exec.Command(vidfarmBinary(t), full...).CombinedOutput()
		return string(out), err
	}
	before, err := c.nodes[a].adminClient().Account(context.Background(), acct.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := adm(dead, "credits", "grant", "--account", acct.AccountID, "--amount", "7"); err != nil {
		t.Fatalf("admin credits grant through the survivors: %v\n%s", err, out)
	}
	want := fmt.Sprintf(`"credits": %d`, before.Credits+7)
	if out, err := adm(dead, "account", "get", "--account", acct.AccountID); err != nil || !strings.Contains(out, want) {
		t.Fatalf("admin account get through the survivors: %v, want %s once granted 7 more:\n%s", err, want, out)
	}
	if out, err := adm([]int{leader}, "cluster", "members"); err == nil {
		t.Fatalf("an admin CLI given only the dead leader's URL got an answer:\n%s", out)
	}
	sdk, err := client.New(c.nodes[a].publicURL(), acct.APIKey, client.WithMembers(c.nodes[b].publicURL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, id := range []string{first.ID, second.ID} {
		v, err := sdk.Wait(ctx, id, nil)
		if err != nil {
			t.Fatalf("waiting for %s: %v", id, err)
		}
		if v.Status != client.StatusCompleted {
			t.Fatalf("video %s ended %s (%+v): the agent did not render it after the leader's loss", id, v.Status, v.Error)
		}
	}
}
