package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/scheduler"
)

// cmdGen draws random but mostly meaningful command sequences: commands name
// accounts, keys, folders, videos, nodes and leases that exist, with now and then
// one that does not, so refusals are exercised too. It learns leases from the
// answers it is fed back (see learn).
type cmdGen struct {
	accounts  []string
	keys      []string
	folders   map[string][]string // by account
	videos    []string
	videoAcct map[string]string
	idem      []idemUse
	nodes     []string
	leases    []scheduler.Lease
	tasks     map[string]string // task id -> name, of every task ever leased
	webhooks  [][2]string       // id, account
	// failingSince guesses each endpoint's run of failures from the attempts
	// drawn (a refused attempt makes it wrong: DisableWebhook is then a no-op);
	// testEvents are the ids of the test events drawn.
	failingSince map[string]int64
	testEvents   []string
	assets       map[string][]string // by account
	kits         map[string][]string // by account
	now          int64
	seq          int
	// farm makes most commands the render farm's (create, lease, progress,
	// complete, fail, heartbeat), so that tasks run far.
	farm bool
	// logOn is whether a StartEventLog was drawn.
	logOn bool
}

type idemUse struct {
	account, key, body string
}

func newCmdGen() *cmdGen {
	return &cmdGen{folders: map[string][]string{}, videoAcct: map[string]string{}, tasks: map[string]string{},
		assets: map[string][]string{}, kits: map[string][]string{}, failingSince: map[string]int64{}, now: t0}
}

func (g *cmdGen) id(prefix string) string {
	g.seq++
	return fmt.Sprintf("%s_%04d", prefix, g.seq)
}

// pick returns one of list, or a name that exists nowhere one time in ten.
func pick(t *rapid.T, list []string, label string) string {
	if len(list) == 0 || rapid.IntRange(0, 9).Draw(t, label+"_missing") == 0 {
		return "missing_" + label
	}
	return rapid.SampledFrom(list).Draw(t, label)
}

// learn records the leases an answer grants.
func (g *cmdGen) learn(f *fsm.FSM, a answer) {
	if r, ok := a.V.(fsm.LeaseResult); ok && r.Found {
		g.leases = append(g.leases, r.Lease)
		if task, ok := f.Task(r.Lease.TaskID); ok {
			g.tasks[task.ID] = task.Name
		}
	}
}

func (g *cmdGen) lease(t *rapid.T) scheduler.Lease {
	if len(g.leases) == 0 {
		return scheduler.Lease{TaskID: "missing_task", NodeID: "missing_node", VideoID: "missing_video"}
	}
	// Mostly one of the latest leases, which are likely still held.
	recent := g.leases[max(len(g.leases)-3, 0):]
	if rapid.IntRange(0, 3).Draw(t, "old_lease") == 0 {
		recent = g.leases
	}
	l := rapid.SampledFrom(recent).Draw(t, "lease")
	if rapid.IntRange(0, 9).Draw(t, "stale_token") == 0 {
		l.Token++
	}
	return l
}

func genNodeSpec(t *rapid.T) scheduler.Node {
	n := scheduler.Node{CPUSlots: rapid.IntRange(0, 3).Draw(t, "cpu")}
	for i := range rapid.IntRange(0, 2).Draw(t, "gpus") {
		mem := rapid.SampledFrom([]float64{16, 48, 80}).Draw(t, "gpu_mem")
		n.GPUs = append(n.GPUs, scheduler.GPU{ID: fmt.Sprintf("g%d", i), MemoryTotalGB: mem, MemoryFreeGB: mem})
	}
	if rapid.IntRange(0, 3).Draw(t, "tools") > 0 {
		n.Tools = []string{"ffmpeg", "espeak-ng"}
	}
	if rapid.IntRange(0, 3).Draw(t, "models") > 0 {
		n.Models = []string{models.AutoSceneModel}
	}
	return n
}

// genVoices draws a node's voices from a small pool, in any order, with now
// and then a duplicate id or a description other nodes do not share.
func genVoices(t *rapid.T) []fsm.Voice {
	pool := []fsm.Voice{
		{ID: "en-us", Name: "English (America)", Language: "en-us", Gender: "male"},
		{ID: "en-us", Name: "English (USA)", Language: "en-us", Gender: "male"}, // another espeak-ng
		{ID: "en-us+f3", Name: "English (America), Female 3", Language: "en-us", Gender: "female"},
		{ID: "fr-fr", Name: "French (France)", Language: "fr-fr", Gender: "male"},
		{ID: "yue", Name: "Chinese (Cantonese)", Language: "yue", Gender: "male"},
	}
	n := rapid.IntRange(0, 4).Draw(t, "voices")
	out := make([]fsm.Voice, n)
	for i := range out {
		out[i] = rapid.SampledFrom(pool).Draw(t, "voice")
	}
	return out
}

func (g *cmdGen) next(t *rapid.T) fsm.Command {
	// Time moves on by up to a minute a step, and now and then by up to 13 h, so
	// leases and idempotency records expire.
	if rapid.IntRange(0, 9).Draw(t, "big_step") == 0 {
		g.now += rapid.Int64Range(0, 13*3600*1e9).Draw(t, "dt_big")
	} else {
		g.now += rapid.Int64Range(0, 60*1e9).Draw(t, "dt")
	}
	plans := []string{fsm.PlanFree, fsm.PlanPro, fsm.PlanMax, "bogus"}
	if len(g.accounts) == 0 && !g.logOn && rapid.Bool().Draw(t, "log_first") {
		return g.eventLogCommand(t) // half the runs record every event from the start
	}
	if len(g.accounts) > 0 && rapid.IntRange(0, 7).Draw(t, "app") == 0 {
		return g.appCommand(t)
	}
	kind := rapid.IntRange(0, 29).Draw(t, "kind")
	if g.farm {
		kind = rapid.SampledFrom([]int{6, 7, 10, 12, 12, 12, 13, 13, 14, 14, 14, 15, 16, 17, 22, 22, 22}).Draw(t, "farm_kind")
		if len(g.nodes) < 2 {
			kind = 11
		}
	}
	switch {
	case len(g.accounts) == 0:
		kind = 0
	case kind >= 25:
		return g.nextAssetCommand(t, kind-25)
	case kind >= 22:
		return g.webhookCommand(t)
	case kind >= 18: // leasing and completing twice as often: videos get done
		kind = 12 + 2*(kind%2)
	}
	switch kind {
	case 0:
		id := g.id("acct")
		if rapid.IntRange(0, 19).Draw(t, "dup_account") == 0 && len(g.accounts) > 0 {
			id = g.accounts[0]
		}
		key := g.id("key")
		c := &fsm.CreateAccount{AccountID: id, Name: "n" + id, Plan: rapid.SampledFrom(plans).Draw(t, "plan"),
			Credits: rapid.Int64Range(-1, 60).Draw(t, "credits"), KeyID: key, KeyHash: keyHash(key), KeyHint: key[:5], Now: g.now}
		g.accounts = append(g.accounts, id)
		g.keys = append(g.keys, key)
		if rapid.Bool().Draw(t, "keyed_create") { // a few keys and bodies: replays and conflicts
			return &fsm.CreateAccountOnce{CreateAccount: *c,
				Key: rapid.SampledFrom([]string{"", "c1", "c2", "c3"}).Draw(t, "create_key"), RequestHash: [32]byte{rapid.Byte().Draw(t, "request") % 2}}
		}
		return c
	case 1:
		key := g.id("key")
		g.keys = append(g.keys, key)
		return &fsm.CreateKey{AccountID: pick(t, g.accounts, "acct"), KeyID: key, KeyHash: keyHash(key), KeyHint: "h", Now: g.now}
	case 2:
		return &fsm.RevokeKey{KeyID: pick(t, g.keys, "key"), Now: g.now}
	case 3:
		if rapid.Bool().Draw(t, "keyed") { // a few keys and amounts: replays and conflicts
			return &fsm.GrantCreditsOnce{AccountID: pick(t, g.accounts, "acct"), Amount: rapid.Int64Range(-1, 3).Draw(t, "amount"),
				Key: rapid.SampledFrom([]string{"", "g1", "g2", "g3"}).Draw(t, "grant_key"), Now: g.now}
		}
		return &fsm.GrantCredits{AccountID: pick(t, g.accounts, "acct"), Amount: rapid.Int64Range(-2, 40).Draw(t, "amount"), Now: g.now}
	case 4:
		if rapid.IntRange(0, 9).Draw(t, "next_in_line") == 0 { // the created events' reasons switch mid-run
			return &fsm.NextInLine{Now: g.now}
		}
		return &fsm.SetPlan{AccountID: pick(t, g.accounts, "acct"), Plan: rapid.SampledFrom(plans).Draw(t, "plan"), Now: g.now}
	case 5:
		acct := pick(t, g.accounts, "acct")
		id := g.id("fld")
		g.folders[acct] = append(g.folders[acct], id)
		return &fsm.CreateFolder{FolderID: id, AccountID: acct, Name: "f" + id, Now: g.now}
	case 6, 7:
		acct := pick(t, g.accounts, "acct")
		id := g.id("vid")
		g.videos = append(g.videos, id)
		g.videoAcct[id] = acct
		spec := fsm.Spec{Mode: fsm.ModeAuto, Prompt: "p" + id, DurationSeconds: 5, Orientation: "portrait"}
		if rapid.IntRange(0, 2).Draw(t, "with_assets") == 0 {
			spec.FileAssetIDs = []string{pick(t, g.assets[acct], "asset")}
			if ks := g.kits[acct]; len(ks) > 0 {
				spec.BrandKitID = rapid.SampledFrom(ks).Draw(t, "kit")
			}
		}
		if rapid.Bool().Draw(t, "manual") {
			spec = manualSpec("p" + id)
		}
		c := &fsm.CreateVideo{VideoID: id, AccountID: acct, Price: rapid.Int64Range(0, 20).Draw(t, "price"), Now: g.now, Spec: spec}
		if fs := g.folders[acct]; len(fs) > 0 && rapid.Bool().Draw(t, "in_folder") {
			c.Spec.FolderID = rapid.SampledFrom(fs).Draw(t, "folder")
		}
		if rapid.IntRange(0, 2).Draw(t, "idem") > 0 {
			u := idemUse{account: acct, key: rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "idem_key"),
				body: rapid.SampledFrom([]string{"b1", "b2"}).Draw(t, "idem_body")}
			c.IdempotencyKey, c.BodyHash = u.key, sha256.Sum256([]byte(u.body))
			g.idem = append(g.idem, u)
		}
		return c
	case 8:
		v := pick(t, g.videos, "vid")
		acct := g.videoAcct[v]
		if rapid.IntRange(0, 9).Draw(t, "other_account") == 0 {
			acct = pick(t, g.accounts, "acct")
		}
		return &fsm.RenderPreview{VideoID: v, AccountID: acct, Now: g.now}
	case 9:
		if rapid.IntRange(0, 2).Draw(t, "cancel") == 0 {
			v := pick(t, g.videos, "vid")
			acct := g.videoAcct[v]
			if rapid.IntRange(0, 9).Draw(t, "other_account") == 0 {
				acct = pick(t, g.accounts, "acct")
			}
			return &fsm.CancelVideo{VideoID: v, AccountID: acct, Now: g.now}
		}
		return &fsm.FailVideo{VideoID: pick(t, g.videos, "vid"), Reason: "r", Now: g.now}
	case 10:
		return &fsm.ExpireIdempotency{Before: g.now - fsm.IdempotencyTTL}
	case 11:
		id := g.id("node")
		if rapid.IntRange(0, 9).Draw(t, "reregister") == 0 && len(g.nodes) > 0 {
			id = rapid.SampledFrom(g.nodes).Draw(t, "node")
		}
		g.nodes = append(g.nodes, id)
		return &fsm.RegisterNode{NodeID: id, Name: "name-" + id, CredHash: keyHash("cred-" + id), Node: genNodeSpec(t), Now: g.now,
			Voices: genVoices(t)}
	case 12:
		return &fsm.LeaseTask{NodeID: pick(t, g.nodes, "node"), LeaseMS: rapid.Int64Range(1000, 120_000).Draw(t, "lease_ms"), Now: g.now}
	case 13:
		l := g.lease(t)
		return &fsm.TaskProgress{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Percent: rapid.Float64Range(-5, 105).Draw(t, "pct"), Now: g.now}
	case 14:
		l := g.lease(t)
		name := g.tasks[l.TaskID]
		arts := map[string]string{}
		for _, f := range []string{"video.mp4", "captions.vtt", "out.bin"} {
			arts[f] = "videos/" + l.VideoID + "/" + name + "/" + f
		}
		return &fsm.CompleteTask{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Artifacts: arts,
			Scenes: rapid.IntRange(0, 3).Draw(t, "scenes"), DurationSeconds: rapid.Float64Range(0, 20).Draw(t, "secs"), Now: g.now}
	case 15:
		l := g.lease(t)
		if rapid.IntRange(0, 4).Draw(t, "permanently") == 0 { // the node found the video's input unusable
			return &fsm.FailTaskPermanently{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Reason: "input refused", Now: g.now}
		}
		return &fsm.FailTask{NodeID: l.NodeID, TaskID: l.TaskID, Token: l.Token, Reason: "boom", Now: g.now}
	case 16:
		node := pick(t, g.nodes, "node")
		var held []fsm.HeldLease
		for _, l := range g.leases {
			if l.NodeID == node && rapid.Bool().Draw(t, "held") {
				held = append(held, fsm.HeldLease{TaskID: l.TaskID, Token: l.Token, Percent: rapid.Float64Range(0, 100).Draw(t, "hb_pct")})
			}
		}
		return &fsm.NodeHeartbeat{NodeID: node, Held: held, Draining: rapid.IntRange(0, 9).Draw(t, "drain") == 0, LeaseMS: 60_000, Now: g.now}
	default:
		switch rapid.IntRange(0, 9).Draw(t, "node_or_expire") {
		case 0, 1:
			return &fsm.DeregisterNode{NodeID: pick(t, g.nodes, "node"), Now: g.now}
		case 2, 3, 4:
			return g.maintenanceCommand(t)
		}
		return &fsm.ExpireLeases{Now: g.now}
	}
}

// maintenanceCommand draws a cordon, drain, uncordon or hand-back (of a
// missing node now and then, to be refused).
func (g *cmdGen) maintenanceCommand(t *rapid.T) fsm.Command {
	node := pick(t, g.nodes, "node")
	switch rapid.IntRange(0, 3).Draw(t, "maintenance") {
	case 0:
		return &fsm.CordonNode{NodeID: node, Reason: rapid.SampledFrom([]string{"", "disk"}).Draw(t, "reason"), Now: g.now}
	case 1:
		// Now and then a deadline already behind the leader's clock, to be refused.
		return &fsm.DrainNode{NodeID: node, Deadline: g.now + rapid.Int64Range(-1e9, 120*1e9).Draw(t, "drain_for"), Now: g.now}
	case 2:
		return &fsm.UncordonNode{NodeID: node, Now: g.now}
	}
	return &fsm.HandBackDrained{Now: g.now}
}

// nextAssetCommand draws an asset or brand-kit command.
func (g *cmdGen) nextAssetCommand(t *rapid.T, kind int) fsm.Command {
	acct := pick(t, g.accounts, "acct")
	switch kind {
	case 0:
		id := g.id("as")
		g.assets[acct] = append(g.assets[acct], id)
		return &fsm.CreateAsset{Asset: fsm.Asset{ID: id, AccountID: acct, Filename: "f.png", ContentType: "image/png",
			Size: rapid.Int64Range(0, 3).Draw(t, "size"), BlobKey: "assets/" + id + ".png", CreatedAt: g.now}}
	case 1:
		return &fsm.CompleteAsset{AssetID: pick(t, g.assets[acct], "asset"), AccountID: acct,
			StoredSize: rapid.Int64Range(1, 3).Draw(t, "stored"), ContentType: rapid.SampledFrom([]string{"image/png", "image/png", "image/jpeg"}).Draw(t, "sniffed"), Now: g.now}
	case 2:
		return &fsm.DeleteAsset{AssetID: pick(t, g.assets[acct], "asset"), AccountID: acct}
	case 3:
		id := g.id("br")
		g.kits[acct] = append(g.kits[acct], id)
		k := fsm.BrandKit{ID: id, AccountID: acct, Name: "k", Colors: []string{"#112233"}, CreatedAt: g.now}
		if rapid.Bool().Draw(t, "logo_asset") {
			k.LogoAssetID = pick(t, g.assets[acct], "asset")
		}
		return &fsm.CreateBrandKit{Kit: k}
	default:
		return &fsm.DeleteBrandKit{KitID: pick(t, g.kits[acct], "kit"), AccountID: acct}
	}
}

// answer is an apply result with the error reduced to its text, for comparing.
type answer struct {
	V   any
	Err string
}

func answerOf(v any, err error) answer {
	a := answer{V: v}
	if err != nil {
		a.Err = err.Error()
	}
	return a
}

// applyBoth applies c to f through ApplyCommand and to g through the Raft log, and
// returns the answer both gave.
func applyBoth(t *rapid.T, tt *testing.T, f, g *fsm.FSM, c fsm.Command) answer {
	a := answerOf(viaCommand(tt, f, c))
	b := answerOf(viaLog(tt, g, c))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s answered differently:\n%#v\n%#v", c.Type(), a, b)
	}
	return a
}

// step draws one command, applies it to both and learns from the answer.
func (g *cmdGen) step(t *rapid.T, tt *testing.T, f1, f2 *fsm.FSM) {
	g.learn(f1, applyBoth(t, tt, f1, f2, g.next(t)))
}

func TestDeterminism(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := newCmdGen()
		f1, f2 := fsm.New(), fsm.New()
		n := rapid.IntRange(1, 150).Draw(rt, "n")
		for range n {
			g.step(rt, t, f1, f2)
		}
		b1, b2 := snapshotBytes(t, f1), snapshotBytes(t, f2)
		if !bytes.Equal(b1, b2) {
			rt.Fatalf("two FSMs fed the same %d commands wrote different snapshots", n)
		}
		if !bytes.Equal(b1, snapshotBytes(t, f1)) {
			rt.Fatal("two snapshots of one unchanged FSM differ")
		}
	})
}

func TestSnapshotRestore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := newCmdGen()
		orig, twin := fsm.New(), fsm.New()
		for range rapid.IntRange(1, 150).Draw(rt, "n") {
			g.step(rt, t, orig, twin)
		}
		snap := snapshotBytes(t, orig)
		back := restored(t, snap)
		if !bytes.Equal(snapshotBytes(t, back), snap) {
			rt.Fatal("the restored state snapshots to other bytes")
		}
		sameReads(rt, g, orig, back)

		// Idempotency records answer the same on both sides (replays, duplicates and
		// expiries alike).
		g.now += rapid.Int64Range(0, fsm.IdempotencyTTL).Draw(rt, "replay_dt")
		for _, u := range g.idem {
			c := &fsm.CreateVideo{VideoID: g.id("replay"), AccountID: u.account, Price: 1, Now: g.now,
				Spec: autoSpec("replay", 5), IdempotencyKey: u.key, BodyHash: sha256.Sum256([]byte(u.body))}
			applyBoth(rt, t, orig, back, c)
		}
		// Derived indexes (queue, key hashes, per-account lists) were rebuilt: more
		// commands keep both in step.
		for range rapid.IntRange(0, 60).Draw(rt, "more") {
			g.step(rt, t, orig, back)
		}
		if !bytes.Equal(snapshotBytes(t, orig), snapshotBytes(t, back)) {
			rt.Fatal("original and restored FSM diverged after more commands")
		}
		sameReads(rt, g, orig, back)
	})
}

// sameReads compares every read the API serves.
func sameReads(t *rapid.T, g *cmdGen, a, b *fsm.FSM) {
	same := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("%s differs after restore:\n%#v\n%#v", what, x, y)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	same("stats", sa, sb)
	for _, id := range g.accounts {
		x, okx := a.Account(id)
		y, oky := b.Account(id)
		same("account "+id, []any{x, okx}, []any{y, oky})
		same("folders of "+id, a.Folders(id), b.Folders(id))
		for _, f := range g.folders[id] {
			x, okx := a.Folder(id, f)
			y, oky := b.Folder(id, f)
			same("folder "+f, []any{x, okx}, []any{y, oky})
		}
		same("assets of "+id, a.Assets(id), b.Assets(id))
		same("brand kits of "+id, a.BrandKits(id), b.BrandKits(id))
		for _, as := range g.assets[id] {
			x, okx := a.Asset(id, as)
			y, oky := b.Asset(id, as)
			same("asset "+as, []any{x, okx}, []any{y, oky})
		}
		for _, flt := range []fsm.VideoFilter{{Limit: 1000}, {Limit: 3}, {Status: fsm.StatusQueued, Limit: 1000}} {
			x, errx := a.ListVideos(id, flt)
			y, erry := b.ListVideos(id, flt)
			same("videos of "+id, answerOf(x, errx), answerOf(y, erry))
		}
	}
	for _, k := range g.keys {
		x, okx := a.Key(k)
		y, oky := b.Key(k)
		same("key "+k, []any{x, okx}, []any{y, oky})
		x, okx = a.KeyByHash(keyHash(k))
		y, oky = b.KeyByHash(keyHash(k))
		same("key by hash "+k, []any{x, okx}, []any{y, oky})
	}
	for _, v := range g.videos {
		x, okx := a.Video("", v)
		y, oky := b.Video("", v)
		same("video "+v, []any{x, okx}, []any{y, oky})
	}
	same("nodes", a.Nodes(), b.Nodes())
	same("voices", a.Voices(), b.Voices())
	same("voice count", a.VoiceCount(), b.VoiceCount())
	for _, id := range []string{"en-us", "en-us+f3", "fr-fr", "yue", "de"} {
		x, okx := a.Voice(id)
		y, oky := b.Voice(id)
		same("voice "+id, []any{x, okx}, []any{y, oky})
	}
	for _, n := range g.nodes {
		x, okx := a.NodeByCredHash(keyHash("cred-" + n))
		y, oky := b.NodeByCredHash(keyHash("cred-" + n))
		same("node "+n, []any{x, okx}, []any{y, oky})
	}
	for id := range g.tasks {
		x, okx := a.Task(id)
		y, oky := b.Task(id)
		same("task "+id, []any{x, okx}, []any{y, oky})
	}
	sameWebhookReads(same, g, a, b)
	same("app export", a.AppExport(), b.AppExport())
	x, y := a.PendingExport(0, 1<<20), b.PendingExport(0, 1<<20)
	// Printed, so an empty outbox equals a nil one.
	same("outbox", fmt.Sprint(x.Ledger, x.Events, x.On), fmt.Sprint(y.Ledger, y.Events, y.On))
}

// sampleSnapshot is the snapshot of a small state with every record type.
func sampleSnapshot(t *testing.T) []byte {
	t.Helper()
	w := newWorld(t, appliers[0])
	w.account("a", fsm.PlanPro, 100)
	w.account("b", fsm.PlanFree, 0)
	w.must(&fsm.CreateFolder{FolderID: "fld", AccountID: "a", Name: "f", Now: t0})
	w.must(createVideo("v1", "a", 3, "idem", "body", t0))
	w.must(createVideo("v2", "a", 3, "", "", t0))
	w.must(createVideo("p", "b", 3, "", "", t0))
	w.must(&fsm.CreateAsset{Asset: fsm.Asset{ID: "as_1", AccountID: "a", Filename: "l.png", ContentType: "image/png", Size: 5, BlobKey: "assets/as_1.png"}})
	w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_1", AccountID: "a", Name: "k", Colors: []string{"#123456"}}})
	return snapshotBytes(t, w.f)
}

// recordBounds returns the offset where each record of a snapshot starts, and the
// end of the stream; the header comes before the first.
func recordBounds(t *testing.T, b []byte) []int {
	t.Helper()
	i := bytes.IndexByte(b, '\n') + 1
	var out []int
	for i < len(b) {
		out = append(out, i)
		n, k := binary.Uvarint(b[i+1:])
		if k <= 0 {
			t.Fatalf("bad record length at %d", i)
		}
		i += 1 + k + int(n)
	}
	return append(out, len(b))
}

func TestRestoreRefusesCorruptSnapshots(t *testing.T) {
	good := sampleSnapshot(t)
	bounds := recordBounds(t, good)
	header := good[:bounds[0]]
	if len(bounds) < 6 {
		t.Fatalf("sample snapshot has only %d records", len(bounds)-1)
	}
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not a snapshot", []byte("hello, world, this is not a snapshot at all\n")},
		{"half a header", header[:len(header)/2]},
		{"header of another version", append([]byte(strings.Replace(string(header), "v", "V", 1)), good[len(header):]...)},
		{"header only", header},
		{"cut inside a record body", good[:bounds[3]-2]},
		{"cut inside a record length", good[:bounds[2]+1]},
		{"cut at a record boundary", good[:bounds[len(bounds)-2]]},
		{"cut after the first record", good[:bounds[1]]},
		{"unknown record type", append(bytes.Clone(good[:bounds[1]]), append([]byte{99, 1, 0xc0}, good[bounds[1]:]...)...)},
		{"record length beyond the limit", append(bytes.Clone(header), 2, 0xff, 0xff, 0xff, 0xff, 0x7f)},
		{"undecodable record body", append(bytes.Clone(header), 2, 1, 0xc1)},
		{"record body of the wrong shape", append(bytes.Clone(header), 2, 4, 0xa3, 'a', 'b', 'c')},
		{"a flipped bit in a record body", flip(bounds[2] + (bounds[3]-bounds[2])/2)},
		{"trailing garbage", append(bytes.Clone(good), 2)},
		{"a second stream appended", append(bytes.Clone(good), good[len(header):]...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fsm.New()
			f.ApplyCommand(&fsm.CreateAccount{AccountID: "keep", Plan: fsm.PlanPro, Credits: 5, KeyID: "k", KeyHash: keyHash("k"), Now: t0})
			err := f.Restore(nopCloser{bytes.NewReader(tc.data)})
			if err == nil {
				t.Fatal("a corrupt snapshot was restored")
			}
			if a, ok := f.Account("keep"); !ok || a.Credits != 5 || f.Stats().Accounts != 1 {
				t.Fatalf("a failed restore changed the state: %+v %v, %+v", a, ok, f.Stats())
			}
		})
	}
	// And the uncorrupted stream restores.
	if back := restored(t, good); back.Stats().Videos != 3 {
		t.Fatalf("good snapshot restored %+v", back.Stats())
	}
}

func TestRestoreReplacesState(t *testing.T) {
	f := fsm.New()
	f.ApplyCommand(&fsm.CreateAccount{AccountID: "gone", Plan: fsm.PlanPro, KeyID: "gk", KeyHash: keyHash("gk"), Now: t0})
	if err := f.Restore(nopCloser{bytes.NewReader(sampleSnapshot(t))}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Account("gone"); ok {
		t.Fatal("restore merged into the old state instead of replacing it")
	}
	if _, ok := f.KeyByHash(keyHash("gk")); ok {
		t.Fatal("old key index survived the restore")
	}
	if _, ok := f.Account("a"); !ok {
		t.Fatal("restored state lacks its account")
	}
	// An empty FSM snapshots and restores too.
	empty := snapshotBytes(t, fsm.New())
	if back := restored(t, empty); back.Stats().Accounts != 0 || !bytes.Equal(snapshotBytes(t, back), empty) {
		t.Fatal("empty snapshot does not round-trip")
	}
}
