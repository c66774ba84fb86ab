package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/cluster"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/tlsconf"
	"github.com/vidfarm/vidfarm/internal/members"
)

const adminUsage = `usage: vidfarm admin [--server URL[,URL...]] [--admin-token T] [--ca-file PEM] <command>

  account create --name N --plan free|pro|max [--credits C] [--idempotency-key K]   (with K, a retry opens no second account; its answer's key replaces the earlier answer's)
  account get --account ID
  key create --account ID
  key revoke --key ID
  credits grant --account ID --amount C [--idempotency-key K]   (with K, a retry never grants twice)
  credits debit --account ID --amount C --idempotency-key K
  plan set --account ID --plan free|pro|max
  video fail --video ID [--reason TEXT]
  video inspect ID [--json]    (a video of any account and its task graph: each task's state, node, attempts, failures, times)
  queue [--account ID] [--limit N] [--json]   (what waits, oldest first: why, position, since when)
  webhook deliveries [--account ID] [--webhook ID] [--event ID] [--state pending|delivered|abandoned|cancelled] [--limit N]
  snapshot
  status
  cluster status               (every member's own view: state, leader, term, commit and applied index, bridge)
  cluster members
  cluster add --node ID --raft-addr HOST:PORT --public-url U --admin-url U --agent-url U [--understands T] [--voter]   (a nonvoter; --voter once it caught up)
  cluster remove --node ID
  node list [--json]           (render nodes: state, GPUs, running tasks, last heartbeat, cordoned/draining since)
  node cordon NODE [--reason TEXT] [--json]                  (no new work; running tasks go on)
  node drain NODE [--timeout 15m] [--reason TEXT] [--json]   (cordon; tasks still running after the timeout go back to the queue, not failed)
  node uncordon NODE [--json]  (NODE: a render node's id or name)
  node remove NODE [--force]   (forget a node whose machine is gone; its tasks go back to the queue; --force: one not down)
  backup --out FILE            (the whole state, in the snapshot format)
  restore --in FILE [--force]  (disaster recovery: replaces the cluster's state)
`

// adminServers has fs's flag name take the admin API's address into cl, or
// a cluster's members' admin URLs, comma-separated: a member that cannot
// be reached is passed over for the next (admin.Client.Members).
func adminServers(fs *flag.FlagSet, cl *admin.Client, name, usage string) {
	cl.Server = "http://127.0.0.1:8081"
	fs.Func(name, usage+", or a cluster's members' comma-separated, tried in order while one cannot be reached (default http://127.0.0.1:8081)", func(v string) error {
		urls := members.Split(v)
		cl.Server, cl.Members = urls[0], urls[1:]
		return nil
	})
}

func runAdmin(args []string) error {
	fs := flag.NewFlagSet("admin", flag.ExitOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, adminUsage); fs.PrintDefaults() }
	cl := &admin.Client{}
	adminServers(fs, cl, "server", "admin API address")
	fs.StringVar(&cl.Token, "admin-token", "", "admin token")
	caFile := fs.String("ca-file", "", "PEM CA bundle to trust for an https admin API (default: the system's CAs)")
	if err := parse(fs, args); err != nil {
		return err
	}
	tlsCfg, err := tlsconf.Client(*caFile)
	if err != nil {
		return fmt.Errorf("--ca-file: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	cl.HTTP = &http.Client{Transport: tr}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return fmt.Errorf("no command given")
	}
	cmd := rest[0]
	if len(rest) > 1 && !strings.HasPrefix(rest[1], "-") {
		cmd += " " + rest[1]
		rest = rest[1:]
	}
	timeout := 30 * time.Second
	switch cmd {
	case "backup", "restore":
		timeout = 30 * time.Minute // the whole state crosses the network
	case "snapshot":
		// A checkpoint writes what changed since the last one; after
		// checkpoints that failed (a full disk) that can be minutes, and a
		// CLI that gave up at 30 s said nothing of the snapshot going on.
		timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sub := flag.NewFlagSet("admin "+cmd, flag.ExitOnError)
	account := sub.String("account", "", "account id")
	name := sub.String("name", "", "account name")
	plan := sub.String("plan", "", "plan: free, pro or max")
	credits := sub.Int64("credits", 0, "opening balance in credits")
	amount := sub.Int64("amount", 0, "credits to grant or debit")
	key := sub.String("key", "", "key id")
	video := sub.String("video", "", "video id")
	reason := sub.String("reason", "", "why the video is failed, or the node cordoned or drained")
	webhookID := sub.String("webhook", "", "webhook endpoint id (whk_...)")
	eventID := sub.String("event", "", "event id (evt_...)")
	state := sub.String("state", "", "delivery state: pending, delivered, abandoned or cancelled")
	limit := sub.Int("limit", 0, "at most this many deliveries, newest first (default 50, at most 500), or waiting videos (queue: default 100, at most 1000)")
	idemKey := sub.String("idempotency-key", "", "account creation, grant or debit key: the same key and request never opens an account, grants or debits twice")
	node := sub.String("node", "", "control-plane node id")
	raftAddr := sub.String("raft-addr", "", "the node's Raft address (cluster add)")
	publicURL := sub.String("public-url", "", "the node's public URL (cluster add)")
	adminURL := sub.String("admin-url", "", "the node's admin URL (cluster add)")
	agentURL := sub.String("agent-url", "", "the node's agent URL (cluster add)")
	understands := sub.Uint("understands", 0, "the highest command type the node's binary applies, from its \"control plane ready\" log line (cluster add; default: this binary's)")
	outFile := sub.String("out", "", "file to write the backup to")
	inFile := sub.String("in", "", "backup file to restore")
	force := sub.Bool("force", false, "restore: even though the cluster holds data; node remove: a node that is not down")
	asJSON := sub.Bool("json", false, "node, queue and video inspect: print JSON instead of a table")
	drainTimeout := sub.Duration("timeout", admin.DefaultDrainTimeout, "node drain: how long running tasks may finish before they are handed back")
	voter := sub.Bool("voter", false, "cluster add: make the node a voter (run it once cluster status shows the node caught up); without it the node is added as a nonvoter, which receives the log but does not count for a majority")
	subArgs := rest[1:]
	if _, ok := adminFlags[cmd]; !ok {
		fs.Usage()
		return fmt.Errorf("unknown admin command %q", cmd)
	}
	renderNode := "" // or the video of video inspect
	if takesID(cmd) && len(subArgs) > 0 && !strings.HasPrefix(subArgs[0], "-") {
		renderNode, subArgs = subArgs[0], subArgs[1:] // node cordon NODE --reason …
	}
	if err := sub.Parse(subArgs); err != nil {
		return err
	}
	extra := sub.Args()
	if takesID(cmd) && renderNode == "" && len(extra) > 0 {
		renderNode, extra = extra[0], extra[1:] // node cordon --reason … NODE
	}
	if cmd == "video inspect" && renderNode == "" {
		renderNode = *video
	}
	if err := checkAdminArgs(cmd, sub, renderNode, extra); err != nil {
		return err
	}
	var out any
	var nodes []admin.NodeJSON // node commands: printed as a table without --json
	var table func() error     // queue, video inspect: what prints without --json
	switch cmd {
	case "queue":
		var q admin.QueueJSON
		q, err = cl.Queue(ctx, *account, *limit)
		out, table = q, func() error { return admin.WriteQueueTable(os.Stdout, q, time.Now()) }
	case "video inspect":
		var v admin.VideoInspectJSON
		v, err = cl.InspectVideo(ctx, renderNode)
		out, table = v, func() error { return admin.WriteVideoInspect(os.Stdout, v, time.Now()) }
	case "node list":
		nodes, err = cl.Nodes(ctx)
		out = admin.NodeList{Nodes: nodes}
	case "node remove":
		out, err = cl.RemoveRenderNode(ctx, renderNode, *force)
	case "node cordon", "node drain", "node uncordon":
		var n admin.NodeJSON
		switch cmd {
		case "node cordon":
			n, err = cl.CordonNode(ctx, renderNode, *reason)
		case "node drain":
			n, err = cl.DrainNode(ctx, renderNode, *drainTimeout, *reason)
		default:
			n, err = cl.UncordonNode(ctx, renderNode)
		}
		out, nodes = n, []admin.NodeJSON{n}
	case "account create":
		out, err = cl.CreateAccountOnce(ctx, *name, *plan, *credits, *idemKey)
	case "account get":
		out, err = cl.Account(ctx, *account)
	case "key create":
		out, err = cl.CreateKey(ctx, *account)
	case "key revoke":
		out, err = cl.RevokeKey(ctx, *key)
	case "credits grant":
		out, err = cl.GrantCreditsOnce(ctx, *account, *amount, *idemKey)
	case "credits debit":
		out, err = cl.Debit(ctx, *account, *amount, *idemKey)
	case "cluster status":
		out, err = cl.ClusterStatusAll(ctx)
	case "plan set":
		out, err = cl.SetPlan(ctx, *account, *plan)
	case "video fail":
		out, err = cl.FailVideo(ctx, *video, *reason)
	case "webhook deliveries":
		out, err = cl.WebhookDeliveries(ctx, admin.DeliveryQuery{Account: *account, Webhook: *webhookID, Event: *eventID, State: *state, Limit: *limit})
	case "snapshot":
		out, err = cl.Snapshot(ctx)
	case "status":
		out, err = cl.Do(ctx, "GET", "/admin/v1/status", nil)
	case "cluster members":
		out, err = cl.ClusterMembers(ctx)
	case "cluster add":
		stage := cluster.StageNonvoter
		if *voter {
			stage = cluster.StageVoter
		}
		out, err = cl.AddNode(ctx, cluster.JoinRequest{ID: *node, RaftAddr: *raftAddr, PublicURL: *publicURL, AdminURL: *adminURL, AgentURL: *agentURL,
			Understands: uint8(*understands), Stage: stage}) // checkAdminArgs: at most 255
	case "cluster remove":
		out, err = cl.RemoveNode(ctx, *node)
	case "backup":
		out, err = backupTo(ctx, cl, *outFile)
	case "restore":
		out, err = restoreFrom(ctx, cl, *inFile, *force)
	default: // adminFlags lists every command this switch handles
		return fmt.Errorf("admin command %q has no handler", cmd)
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		// Scripts read stdout: an API refusal is JSON there too (the envelope), and
		// the exit status says it failed.
		_ = printJSON(map[string]any{"error": ae})
	}
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
	case nodes != nil:
		return admin.WriteNodeTable(os.Stdout, nodes, time.Now())
	case table != nil:
		return table()
	}
	return printJSON(out)
}

// backupTo writes the backup next to path and renames it into place once whole
// and checked, so a cut transfer never leaves a file that looks like a
// backup: a server that fails partway may end its answer cleanly (one from
// before it cut the connection instead), and only the file's record count
// and CRC trailer tell.
func backupTo(ctx context.Context, cl *admin.Client, path string) (any, error) {
	if path == "" {
		return nil, errors.New("backup needs --out FILE")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".vidfarm-backup-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	n, err := cl.Backup(ctx, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	var info fsm.BackupInfo
	if err == nil {
		info, err = checkBackupFile(tmp)
		if err != nil {
			err = fmt.Errorf("the backup received from %s (%d bytes) is incomplete or damaged, so %s was not written: %w; run the backup again", cl.Server, n, path, err)
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return map[string]any{"backup": path, "bytes": n, "contents": info}, nil
}

// checkBackupFile reads f from its start as a restore would check it.
func checkBackupFile(f *os.File) (fsm.BackupInfo, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fsm.BackupInfo{}, err
	}
	return fsm.CheckBackup(bufio.NewReader(f))
}

func restoreFrom(ctx context.Context, cl *admin.Client, path string, force bool) (any, error) {
	if path == "" {
		return nil, errors.New("restore needs --in FILE")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return cl.Restore(ctx, f, force)
}

func printJSON(v any) error {
	var b []byte
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
			return err
		}
		b = buf.Bytes()
	} else {
		var err error
		if b, err = json.MarshalIndent(v, "", "  "); err != nil {
			return err
		}
	}
	_, err := fmt.Println(string(b))
	return err
}
