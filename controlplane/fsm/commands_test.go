package fsm_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
)

func ptr[T any](v T) *T { return &v }

// everyCommand holds one command of each type with every field set.
var everyCommand = []struct {
	typ  fsm.MessageType
	b    byte // the on-disk value, fixed forever
	name string
	cmd  fsm.Command
}{
	{fsm.CreateAccountType, 1, "create_account", &fsm.CreateAccount{AccountID: "acct", Name: "n", Plan: fsm.PlanPro, Credits: 7, KeyID: "key", KeyHash: keyHash("s"), KeyHint: "vf_live_abcd", Now: t0}},
	{fsm.CreateKeyType, 2, "create_key", &fsm.CreateKey{AccountID: "acct", KeyID: "key2", KeyHash: keyHash("s2"), KeyHint: "h", Now: t0}},
	{fsm.RevokeKeyType, 3, "revoke_key", &fsm.RevokeKey{KeyID: "key", Now: t0}},
	{fsm.GrantCreditsType, 4, "grant_credits", &fsm.GrantCredits{AccountID: "acct", Amount: 5, Now: t0}},
	{fsm.SetPlanType, 5, "set_plan", &fsm.SetPlan{AccountID: "acct", Plan: fsm.PlanMax, Now: t0}},
	{fsm.CreateFolderType, 6, "create_folder", &fsm.CreateFolder{FolderID: "fld", AccountID: "acct", Name: "f", Now: t0}},
	{fsm.CreateVideoType, 7, "create_video", &fsm.CreateVideo{VideoID: "vid", AccountID: "acct", Price: 9, IdempotencyKey: "idem", BodyHash: keyHash("body"), Now: t0,
		Spec: fsm.Spec{Mode: fsm.ModeManual, Prompt: "p", Name: "n", FolderID: "fld", DurationSeconds: 5, Model: "m", Operation: "image_to_video",
			Resolution: "720p", AspectRatio: "16:9", ImageURL: "https://x.example/a.png", ImageURLs: []string{"https://x.example/b.png"},
			NegativePrompt: ptr("blur"), Seed: ptr[int64](-42), GenerateAudio: ptr(false), Style: ptr("anime"), MovementAmplitude: ptr("small"),
			CfgScale: ptr(0.5), CameraFixed: ptr(true), AutoFix: ptr(false), FileAssetIDs: []string{"as_1"}}}},
	{fsm.RenderPreviewType, 8, "render_preview", &fsm.RenderPreview{VideoID: "vid", AccountID: "acct", Now: t0}},
	// 9, 10 and 11 belonged to start_video, video_progress and complete_video: retired, never reused.
	{fsm.FailVideoType, 12, "fail_video", &fsm.FailVideo{VideoID: "vid", Reason: "r", Now: t0}},
	{fsm.ExpireIdempotencyType, 13, "expire_idempotency", &fsm.ExpireIdempotency{Before: t0}},
	{fsm.RegisterNodeType, 14, "register_node", &fsm.RegisterNode{NodeID: "node", Name: "gpu-1", CredHash: keyHash("cred"), Virtual: true, Now: t0,
		Node: scheduler.Node{ID: "node", GPUs: []scheduler.GPU{{ID: "g0", MemoryTotalGB: 80, MemoryFreeGB: 70, MIG: true}}, CPUSlots: 4,
			Tools: []string{"ffmpeg"}, Models: []string{"m"}, WarmModels: []string{"m"}, Draining: true}}},
	{fsm.NodeHeartbeatType, 15, "node_heartbeat", &fsm.NodeHeartbeat{NodeID: "node", Held: []fsm.HeldLease{{TaskID: "vid/render", Token: 3, Percent: 12.5}},
		Draining: true, LeaseMS: 30000, Now: t0}},
	{fsm.LeaseTaskType, 16, "lease_task", &fsm.LeaseTask{NodeID: "node", LeaseMS: 30000, Now: t0}},
	{fsm.TaskProgressType, 17, "task_progress", &fsm.TaskProgress{NodeID: "node", TaskID: "vid/render", Token: 3, Percent: 50, Now: t0}},
	{fsm.CompleteTaskType, 18, "complete_task", &fsm.CompleteTask{NodeID: "node", TaskID: "vid/render", Token: 3,
		Artifacts: map[string]string{"clip.mp4": "videos/vid/render/clip.mp4"}, Scenes: 2, DurationSeconds: 5.5, Now: t0}},
	{fsm.FailTaskType, 19, "fail_task", &fsm.FailTask{NodeID: "node", TaskID: "vid/render", Token: 3, Reason: "oom", Now: t0}},
	{fsm.ExpireLeasesType, 20, "expire_leases", &fsm.ExpireLeases{Now: t0}},
	{fsm.DeregisterNodeType, 21, "deregister_node", &fsm.DeregisterNode{NodeID: "node", Now: t0}},
	{fsm.CreateAvatarType, 33, "create_avatar", &fsm.CreateAvatar{Avatar: fsm.Avatar{ID: "av_1", AccountID: "acct", Kind: fsm.AvatarKindPhoto,
		Name: "Me", Gender: "female", FileURL: "https://x.example/me.jpg"}, Consent: true, Now: t0}},
	{fsm.CreateSpeechType, 34, "create_speech", &fsm.CreateSpeech{SpeechID: "sp_1", AccountID: "acct", Text: "Hello", VoiceID: "en-us+f3", Now: t0}},
	{fsm.CreateWebhookType, 22, "create_webhook", &fsm.CreateWebhook{WebhookID: "whk", AccountID: "acct", URL: "https://h.example/in",
		Events: []string{fsm.EventVideoFailed}, Secret: "whsec_s", Now: t0}},
	{fsm.DeleteWebhookType, 23, "delete_webhook", &fsm.DeleteWebhook{WebhookID: "whk", AccountID: "acct", Now: t0}},
	{fsm.RecordDeliveryType, 24, "record_delivery", &fsm.RecordDelivery{EventID: "evt", WebhookID: "whk", At: t0, Status: 503,
		Error: "receiver answered 503", LatencyMS: 40}},
	{fsm.PruneDeliveriesType, 25, "prune_deliveries", &fsm.PruneDeliveries{Before: t0}},
	{fsm.SetMemberType, 46, "set_member", &fsm.SetMember{Member: fsm.Member{ID: "n1", RaftAddr: "127.0.0.1:7000",
		PublicURL: "http://127.0.0.1:8080", AdminURL: "http://127.0.0.1:8081", AgentURL: "http://127.0.0.1:8082", Updated: t0}, Now: t0}},
	{fsm.RemoveMemberType, 47, "remove_member", &fsm.RemoveMember{ID: "n1", Now: t0}},
	{fsm.BlobsDeletedType, 48, "blobs_deleted", &fsm.BlobsDeleted{Keys: []string{"videos/vid/plan/plan.json"}, Now: t0}},
	{fsm.ExpireSpeechType, 49, "expire_speech", &fsm.ExpireSpeech{Before: t0 - 1, Now: t0}},
	{fsm.ResealWebhookType, 50, "reseal_webhook", &fsm.ResealWebhook{WebhookID: "whk", Old: "whsec_s", New: "sealed:v1:AAAA", Now: t0}},
	{fsm.SweepIntermediatesType, 51, "sweep_intermediates", &fsm.SweepIntermediates{Now: t0}},
	{fsm.CancelVideoType, 53, "cancel_video", &fsm.CancelVideo{VideoID: "vid", AccountID: "acct", Now: t0}},
	{fsm.RetryDeliveryType, 58, "retry_delivery", &fsm.RetryDelivery{AccountID: "acct", WebhookID: "whk", DeliveryID: "evt.whk", Now: t0}},
	{fsm.SendTestEventType, 59, "send_test_event", &fsm.SendTestEvent{AccountID: "acct", WebhookID: "whk", EventID: "evt_t", Now: t0}},
	{fsm.RotateWebhookSecretType, 60, "rotate_webhook_secret", &fsm.RotateWebhookSecret{AccountID: "acct", WebhookID: "whk",
		Secret: "whsec_2", Until: t0 + 1, Now: t0}},
	{fsm.DisableWebhookType, 61, "disable_webhook", &fsm.DisableWebhook{WebhookID: "whk", FailingSince: t0, MinFailing: 5,
		EventID: "evt_d", Now: t0}},
	{fsm.EnableWebhookType, 62, "enable_webhook", &fsm.EnableWebhook{AccountID: "acct", WebhookID: "whk", Now: t0}},
	{fsm.AbandonDisabledType, 76, "abandon_disabled_deliveries", &fsm.AbandonDisabled{WebhookID: "whk", DisabledAt: t0, Before: t0 + 1, Now: t0 + 2}},
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tc := range everyCommand {
		t.Run(tc.name, func(t *testing.T) {
			if byte(tc.typ) != tc.b || tc.cmd.Type() != tc.typ {
				t.Fatalf("%s has byte %d and command type %d; the log format fixes it at %d", tc.name, tc.typ, tc.cmd.Type(), tc.b)
			}
			if tc.typ.String() != tc.name {
				t.Fatalf("String() = %q, want %q", tc.typ.String(), tc.name)
			}
			entry, err := fsm.Encode(tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if entry[0] != tc.b {
				t.Fatalf("entry starts with %d, want %d", entry[0], tc.b)
			}
			// The log format is the type byte and msgpack's own encoding
			// of the payload, which older binaries read.
			if payload, err := msgpack.Marshal(tc.cmd); err != nil || string(entry[1:]) != string(payload) {
				t.Fatalf("the entry's payload is not msgpack.Marshal's (%v)", err)
			}
			got, err := fsm.Decode(entry)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.cmd) {
				t.Fatalf("decoded\n%#v\nwant\n%#v", got, tc.cmd)
			}
			// Encoding is deterministic: the same command gives the same entry.
			again, _ := fsm.Encode(got)
			if string(again) != string(entry) {
				t.Fatal("re-encoding the decoded command changed the bytes")
			}
		})
	}
	if s := fsm.MessageType(200).String(); s != "message_type_200" {
		t.Fatalf("unknown type names itself %q", s)
	}
}

func TestRetiredTypesAreNotDecoded(t *testing.T) {
	// An entry written under a retired type must never be read as another command.
	for _, b := range []byte{9, 10, 11} {
		if c, err := fsm.Decode(append([]byte{b}, 0x80)); err == nil {
			t.Fatalf("retired type %d decoded as %T", b, c)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	valid, _ := fsm.Encode(&fsm.GrantCredits{AccountID: "acct", Amount: 5, Now: t0})
	tests := []struct {
		name  string
		entry []byte
		msg   string
	}{
		{"empty entry", nil, "empty"},
		{"type zero", []byte{0, 0x80}, "unknown message type 0"},
		{"unknown type", append([]byte{250}, valid[1:]...), "unknown message type 250"},
		{"type 255", []byte{255}, "unknown message type 255"},
		{"no payload", []byte{byte(fsm.GrantCreditsType)}, "grant_credits"},
		{"truncated payload", valid[:len(valid)-3], "grant_credits"},
		{"wrong payload kind", append([]byte{byte(fsm.GrantCreditsType)}, 0xa3, 'a', 'b', 'c'), "grant_credits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fsm.Decode(tc.entry)
			if err == nil {
				t.Fatalf("decoded %#v, want an error", c)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestApplyPanicsOnUndecodableEntry(t *testing.T) {
	for _, entry := range [][]byte{{}, {99, 1, 2}, {byte(fsm.CreateVideoType), 0xc1}} {
		f := fsm.New()
		func() {
			defer func() {
				v := recover()
				if v == nil {
					t.Fatalf("Apply of %x did not panic", entry)
				}
				if !strings.Contains(fmt.Sprint(v), "log index 7") {
					t.Fatalf("panic %v does not name the log index", v)
				}
			}()
			f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: entry})
		}()
	}
	// ApplyBatch takes the same path.
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("ApplyBatch of an undecodable entry did not panic")
			}
		}()
		fsm.New().ApplyBatch([]*raft.Log{{Index: 1, Type: raft.LogCommand, Data: []byte{99}}})
	}()
}

func TestApplySkipsOtherLogTypes(t *testing.T) {
	f := fsm.New()
	for i, typ := range []raft.LogType{raft.LogNoop, raft.LogConfiguration, raft.LogBarrier} {
		if out := f.Apply(&raft.Log{Index: uint64(i + 1), Type: typ, Data: []byte{0xff}}); out != nil {
			t.Fatalf("%v entry answered %#v", typ, out)
		}
		if f.AppliedIndex() != uint64(i+1) {
			t.Fatalf("applied index %d after entry %d", f.AppliedIndex(), i+1)
		}
	}
}

func TestApplyBatchMatchesApply(t *testing.T) {
	var logs []*raft.Log
	cmds := []fsm.Command{
		&fsm.CreateAccount{AccountID: "a", Plan: fsm.PlanPro, Credits: 10, KeyID: "k", KeyHash: keyHash("k"), Now: t0},
		createVideo("v1", "a", 6, "", "", t0),
		createVideo("v2", "a", 6, "", "", t0), // refused: 4 left
		&fsm.FailVideo{VideoID: "v1", Now: t0},
		createVideo("v3", "a", 10, "", "", t0),
	}
	for i, c := range cmds {
		data, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
	}
	logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogNoop})
	one, batch := fsm.New(), fsm.New()
	var singles []any
	for _, l := range logs {
		singles = append(singles, one.Apply(l))
	}
	batched := batch.ApplyBatch(logs)
	if !reflect.DeepEqual(singles, batched) {
		t.Fatalf("ApplyBatch answered\n%#v\nApply answered\n%#v", batched, singles)
	}
	if batch.AppliedIndex() != uint64(len(logs)) {
		t.Fatalf("applied index %d", batch.AppliedIndex())
	}
	if r := batched[2].(*fsm.Result); r.Err == nil {
		t.Fatal("third create should be refused as a value")
	}
	if string(snapshotBytes(t, one)) != string(snapshotBytes(t, batch)) {
		t.Fatal("ApplyBatch reached another state than Apply")
	}
}

// BenchmarkEncodeCreate measures encoding a create's command for the Raft
// log (the leader does it once per create): time, bytes and allocations.
// The "marshal" case is what Encode did before it wrote into one
// presized buffer: msgpack.Marshal and a copy behind the type byte. Both
// go through CreateVideo's own encoder (codec.go).
func BenchmarkEncodeCreate(b *testing.B) {
	c := &fsm.CreateVideo{VideoID: "vid_0123456789abcdefghijklmn", AccountID: "acct_0123456789abcdefgh",
		Spec: autoSpec("A thirty second tour of a solar lantern for campers", 30), Price: 3, Now: 1}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := fsm.Encode(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := msgpack.Marshal(c)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]byte, 1+len(p))
			out[0] = byte(c.Type())
			copy(out[1:], p)
		}
	})
	// What every replica does with the entry, on the FSM's goroutine.
	entry, err := fsm.Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := fsm.Decode(entry); err != nil {
				b.Fatal(err)
			}
		}
	})
}
