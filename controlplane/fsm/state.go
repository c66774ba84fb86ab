package fsm

import (
	"fmt"
	"maps"

	"github.com/vidfarm/vidfarm/scheduler"
)

// state is the data behind the FSM. Apply functions change it in place; readers
// get copies through the FSM's methods.
type state struct {
	accounts  map[string]*Account
	keys      map[string]*Key
	keyByHash map[[32]byte]string

	folders        map[string]*Folder
	accountFolders map[string][]string // folder ids in creation order

	// Videos are in two tiers (tiers.go): videos and accountVideos (ids in
	// creation order) hold the memory tier, disk the rest.
	videos        map[string]*Video
	accountVideos map[string][]string
	seqOf         map[string]uint64 // sequence number of every video in memory
	videoSeq      uint64            // the last sequence number given
	// listedOnDisk are videos in memory that the disk tier lists already.
	listedOnDisk map[string]struct{}
	// disk is the disk tier; nil keeps every video in memory (New).
	disk          *store
	diskCounts    map[string]videoCounts
	diskLeftovers map[string]struct{} // videos on disk holding intermediates
	// restoreTo takes finished videos while a snapshot is read into a store,
	// and schedJoin are task graphs read from it (readOpts).
	restoreTo *restoreSink
	schedJoin []scheduler.VideoRecord
	// keepRawSched and rawSched: a state read only to be written out again
	// keeps its scheduler record as read (readOpts.rawSched).
	keepRawSched bool
	rawSched     *scheduler.Snapshot

	// idem holds the idempotency records by idemID (table.go).
	idem *table[Idempotency]
	// dirty lists the records changed since the last checkpoint (hot.go).
	dirty dirty

	avatars        map[string]*Avatar
	accountAvatars map[string][]string // avatar ids in creation order
	speech         map[string]*Speech
	accountSpeech  map[string][]string // speech ids in creation order
	assets         map[string]*Asset
	accountAssets  map[string][]string // asset ids in creation order
	kits           map[string]*BrandKit
	accountKits    map[string][]string // brand kit ids in creation order

	nodes      map[string]*Node
	nodeByCred map[[32]byte]string
	// voices is the catalogue: the union of the nodes' voices.
	voices *voiceIndex
	// routing: tts tasks require their voice, plan and composite tasks
	// their stage runner (routing.go).
	routing bool
	// activeWebhookLimit: MaxWebhooksPerAccount counts enabled endpoints
	// only (ActiveWebhookLimit).
	activeWebhookLimit bool
	// nextInLine: the scheduler says next_in_line (next_in_line.go).
	nextInLine bool

	// members are the control-plane nodes' addresses, by Raft server id.
	members map[string]*Member

	// sched holds the render work: task graphs, nodes' capacity, leases.
	sched *scheduler.State

	webhooks        map[string]*Webhook
	accountWebhooks map[string][]string // webhook ids in creation order
	// events (by id) and deliveries (by Delivery.ID) are the webhook outbox
	// (table.go); pending indexes the deliveries still waiting for an
	// attempt, which the deliveries table keeps in memory.
	events     *table[Event]
	deliveries *table[Delivery]
	pending    pendingIndex
	// outboxWritten is set by an apply that wrote deliveries (not snapshotted).
	outboxWritten bool
	// eventLog is every account's event log, by event id, and evlog its
	// hot part (eventlog.go).
	eventLog *table[LoggedEvent]
	evlog    eventLog
	// garbage lists the keys of intermediate blobs of finished videos that
	// the leader is to delete (blobgc.go).
	garbage []string
	// out, in, debits and the outbox tables belong to the app-database
	// bridge (appdb.go, appdb_outbox.go).
	out       outbox
	in        inbound
	debits    *table[Debit] // by idemID
	appLedger *table[LedgerEntry]
	appEvents *table[VideoEvent]
	// grants are the admin API's keyed grants, by idemID (grants.go).
	grants *table[KeyedGrant]
	// accountCreates are the admin API's keyed account creations, by
	// accountCreateID (account_creates.go).
	accountCreates *table[KeyedAccountCreate]
}

func newState() *state {
	s := &state{
		accounts:       map[string]*Account{},
		keys:           map[string]*Key{},
		keyByHash:      map[[32]byte]string{},
		folders:        map[string]*Folder{},
		accountFolders: map[string][]string{},
		videos:         map[string]*Video{},
		accountVideos:  map[string][]string{},
		seqOf:          map[string]uint64{},
		listedOnDisk:   map[string]struct{}{},
		diskCounts:     map[string]videoCounts{},
		diskLeftovers:  map[string]struct{}{},
		avatars:        map[string]*Avatar{},
		accountAvatars: map[string][]string{},
		speech:         map[string]*Speech{},
		accountSpeech:  map[string][]string{},
		assets:         map[string]*Asset{},
		accountAssets:  map[string][]string{},
		kits:           map[string]*BrandKit{},
		accountKits:    map[string][]string{},
		nodes:          map[string]*Node{},
		nodeByCred:     map[[32]byte]string{},
		voices:         newVoiceIndex(),
		sched:          newScheduler(),
		members:        map[string]*Member{},

		webhooks:        map[string]*Webhook{},
		accountWebhooks: map[string][]string{},
		pending:         newPendingIndex(),
	}
	s.newTables()
	return s
}

func newScheduler() *scheduler.State {
	s, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		panic(fmt.Sprintf("fsm: default scheduler config refused: %v", err))
	}
	return s
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneBool(p *bool) *bool {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

// Clone returns a deep copy of the spec.
func (s Spec) Clone() Spec {
	s.FileAssetIDs = cloneStrings(s.FileAssetIDs)
	s.ImageURLs = cloneStrings(s.ImageURLs)
	s.NegativePrompt = cloneString(s.NegativePrompt)
	s.Seed = cloneInt64(s.Seed)
	s.GenerateAudio = cloneBool(s.GenerateAudio)
	s.Style = cloneString(s.Style)
	s.MovementAmplitude = cloneString(s.MovementAmplitude)
	s.CfgScale = cloneFloat(s.CfgScale)
	s.CameraFixed = cloneBool(s.CameraFixed)
	s.AutoFix = cloneBool(s.AutoFix)
	return s
}

// Clone returns a deep copy of the video.
func (v Video) Clone() Video {
	v.Spec = v.Spec.Clone()
	v.Artifacts = maps.Clone(v.Artifacts)
	return v
}
