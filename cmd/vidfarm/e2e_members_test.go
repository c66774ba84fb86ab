package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/client"
)

// TestE2ECLIAcrossMembers: `vidfarm video` given a three-node cluster's
// members in --url creates a video through a follower, then the leader is
// SIGKILLed and a CLI whose first URL is the dead leader still reads and
// creates: its first attempt is refused and the next member answers,
// forwarding to the new leader.
func TestE2ECLIAcrossMembers(t *testing.T) {
	c := newChaosCluster(t, 3)
	c.startAll()
	leader := c.waitLeader(30*time.Second, c.nodes...)
	a, b := (leader+1)%3, (leader+2)%3
	acct, err := c.nodes[leader].adminClient().CreateAccount(context.Background(), "members", "pro", 10_000)
	if err != nil {
		t.Fatal(err)
	}
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
	if got.ID != first.ID || got.Status != client.StatusQueued {
		t.Fatalf("get through the survivors: %s %s, want %s queued", got.ID, got.Status, first.ID)
	}
	second, err := run(dead, create...)
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == "" || second.ID == first.ID || second.Status != client.StatusQueued {
		t.Fatalf("create through the survivors: %+v", second)
	}
	// Without the members the dead leader's URL is all the CLI has.
	if _, err := run([]int{leader}, "get", first.ID); err == nil {
		t.Fatal("a CLI given only the dead leader's URL got an answer")
	}
}
