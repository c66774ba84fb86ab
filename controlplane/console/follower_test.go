package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/console"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/models"
)

// TestConsoleOnFollower logs in to the console of a follower of a two-node
// cluster: its pages show the farm from its own copy of the state (a node
// registered through the leader appears once replicated) with every
// member's own Raft view, and a drain made there reaches the leader, as
// `vidfarm admin` does through a follower.
func TestConsoleOnFollower(t *testing.T) {
	leader := startFarm(t)
	follower := startFarm(t, func(c *server.Config) { c.NodeID, c.Join = "cp2", "http://"+leader.srv.AdminAddr() })
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, err := follower.admin.ClusterMembers(ctx)
		if err == nil && m.Leader == "cp1" && len(m.Members) == 2 && m.Members[0].Suffrage == "Voter" && m.Members[1].Suffrage == "Voter" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cp2 did not become a voter: %+v %v", m, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	cred := leader.register("gpu-f", models.IDs())
	// Sent to the follower's agent listener, the heartbeat is forwarded:
	// the leader keeps the readings, the follower none.
	follower.telemetry(cred, gpuSample)
	for _, m := range []*farm{leader, follower} { // the follower forwards the admin listing to the leader
		if n, err := m.admin.Nodes(ctx); err != nil || len(n) != 1 || n[0].TelemetryAt == nil || n[0].GPUs[0].TemperatureC == nil {
			t.Fatalf("the node listing through %s after a heartbeat through the follower: %+v, %v", m.srv.AdminAddr(), n, err)
		}
	}

	base := "http://" + follower.srv.AdminAddr()
	st, body, cks := send(t, "POST", base+"/console/login", `{"token": "`+adminToken+`"}`, nil, nil)
	if st != http.StatusOK || len(cks) != 1 {
		t.Fatalf("login on the follower: %d %s", st, body)
	}
	var sess console.SessionJSON
	must(t, json.Unmarshal([]byte(body), &sess), "login answer")

	var farm console.FarmJSON
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // polling interval
		st, body, _ = send(t, "GET", base+"/console/api/farm", "", cks[0], nil)
		if st != http.StatusOK {
			t.Fatalf("farm on the follower: %d %s", st, body)
		}
		must(t, json.Unmarshal([]byte(body), &farm), "farm answer")
		if len(farm.Nodes) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if farm.Self.NodeID != "cp2" || farm.Self.State != "follower" || farm.Self.LeaderID != "cp1" {
		t.Errorf("the follower's page says it is served by %+v", farm.Self)
	}
	if len(farm.Nodes) != 1 || farm.Nodes[0].Name != "gpu-f" {
		t.Errorf("the follower's farm page shows nodes %+v", farm.Nodes)
	}
	if !farm.TelemetryOnLeader || len(farm.Nodes) == 1 && (farm.Nodes[0].TelemetryAt != nil || farm.Nodes[0].GPUs[0].MemoryUsedGB != nil) {
		t.Errorf("the follower's page: telemetry_on_leader %v, node %+v", farm.TelemetryOnLeader, farm.Nodes)
	}
	if farm.Cluster == nil || len(farm.Cluster.Nodes) != 2 {
		t.Fatalf("members on the follower's page: %+v %s", farm.Cluster, farm.ClusterError)
	}
	for _, m := range farm.Cluster.Nodes {
		if m.Status == nil || m.Status.NodeID != m.ID || m.Status.AppliedIndex == 0 || m.Status.LeaderID != "cp1" {
			t.Errorf("member %s on the follower's page: %+v %s", m.ID, m.Status, m.Error)
		}
	}

	st, body, _ = send(t, "POST", base+"/console/api/nodes/gpu-f/drain", `{"timeout_seconds": 60, "reason": "from the follower"}`, cks[0],
		map[string]string{console.CSRFHeader: sess.CSRFToken})
	if st != http.StatusOK {
		t.Fatalf("drain through the follower: %d %s", st, body)
	}
	// The leader's state has it (the follower's session does not work there).
	if s := leader.nodeState("gpu-f"); s != admin.NodeDrained {
		t.Fatalf("gpu-f on the leader after a drain through the follower: %s", s)
	}
	if st, _, _ := send(t, "GET", "http://"+leader.srv.AdminAddr()+"/console/api/farm", "", cks[0], nil); st != http.StatusUnauthorized {
		t.Errorf("the follower's session on the leader: %d", st)
	}
}
