package fsm

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vmihailenco/msgpack/v5"
	"go.etcd.io/bbolt"
)

// The snapshot stream: a magic line, then records, each a type byte, a uvarint
// length and a msgpack body. Records come in a fixed order (accounts by id, then each
// account's keys, folders and videos in creation order), so every replica writes the
// same bytes for the same state. The last record is an end record holding the number
// of records before it and the CRC-32C of every byte before it, so a stream cut at a
// record boundary or changed in transit is refused instead of restored in part.
const snapshotMagic = "vidfarm-fsm-snapshot-v2\n"

type recordType byte

const (
	recScheduler recordType = iota + 1
	recAccount
	recKey
	recFolder
	recVideo
	recIdempotency
	recEnd
	recNode
)

// Media job records (numbers 16–18 are theirs).
const (
	recAvatar recordType = 16
	recSpeech recordType = 17
)

// Webhook records (issue 4): endpoints by account in creation order, then the
// outbox's events and deliveries, each sorted by id.
const (
	recWebhook  recordType = 10
	recEvent    recordType = 11
	recDelivery recordType = 12
)

// Record types of assets and brand kits (numbers reserved for them).
const (
	recAsset    recordType = 13
	recBrandKit recordType = 14
)

// Records of the app-database bridge (appdb.go, ledger.go).
const (
	recAppBridge  recordType = 19
	recLedger     recordType = 20
	recVideoEvent recordType = 21
	recDebit      recordType = 22
)
const recMember recordType = 24

// trailer is the body of the end record.
type trailer struct {
	Records uint64 `msgpack:"records"`
	CRC32C  uint32 `msgpack:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type record struct {
	typ recordType
	v   any
}

// recAccountVideos stands, in a copy of the state, for one account's videos:
// the memory tier's, copied, which writeSnapshot merges with the disk tier's.
// It is never written.
const recAccountVideos recordType = 255

// recTable stands, likewise, for a table's records (tableRecords), merged
// with the file's by writeSnapshot.
const recTable recordType = 254

type accountVideos struct {
	account string
	mem     []seqVideo
	// changed are videos on disk changed in memory since (a backup's copy).
	changed map[string]Video
}

type seqVideo struct {
	v   Video
	seq uint64
}

// records copies the state into a list of records; the caller holds the read
// lock. With hotOnly, the records a checkpoint writes one per key (hot.go)
// are left out: videos, idempotency records, the scheduler's task graphs, webhook events and deliveries.
func (s *state) records(hotOnly bool) []record {
	out := make([]record, 0, 1+len(s.nodes)+len(s.accounts)+len(s.keys)+len(s.folders)+len(s.accounts)+len(s.accounts)+len(s.assets)+len(s.kits))
	if hotOnly {
		out = append(out, record{recScheduler, s.sched.SnapshotHeader()})
	} else if s.rawSched != nil {
		out = append(out, record{recScheduler, *s.rawSched})
	} else {
		out = append(out, record{recScheduler, s.sched.Snapshot()})
	}
	for _, m := range s.memberList() {
		out = append(out, record{recMember, m})
	}
	nodeIDs := make([]string, 0, len(s.nodes))
	for id := range s.nodes {
		nodeIDs = append(nodeIDs, id)
	}
	slices.Sort(nodeIDs)
	for _, id := range nodeIDs {
		out = append(out, record{recNode, *s.nodes[id]})
	}
	ids := make([]string, 0, len(s.accounts))
	for id := range s.accounts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	keysByAccount := map[string][]*Key{}
	for _, k := range s.keys {
		keysByAccount[k.AccountID] = append(keysByAccount[k.AccountID], k)
	}
	for _, id := range ids {
		out = append(out, record{recAccount, *s.accounts[id]})
		ks := keysByAccount[id]
		slices.SortFunc(ks, func(a, b *Key) int { return cmp.Compare(a.ID, b.ID) })
		for _, k := range ks {
			out = append(out, record{recKey, *k})
		}
		for _, fid := range s.accountFolders[id] {
			out = append(out, record{recFolder, *s.folders[fid]})
		}
		if !hotOnly {
			av := accountVideos{account: id}
			for _, vid := range s.accountVideos[id] {
				av.mem = append(av.mem, seqVideo{s.videos[vid].Clone(), s.seqOf[vid]})
			}
			out = append(out, record{recAccountVideos, av})
		}
		for _, aid := range s.accountAvatars[id] {
			out = append(out, record{recAvatar, *s.avatars[aid]})
		}
		for _, sid := range s.accountSpeech[id] {
			out = append(out, record{recSpeech, *s.speech[sid]})
		}
		for _, aid := range s.accountAssets[id] {
			out = append(out, record{recAsset, *s.assets[aid]})
		}
		for _, kid := range s.accountKits[id] {
			out = append(out, record{recBrandKit, s.kits[kid].Clone()})
		}
		if !hotOnly {
			out = append(out, record{recTable, s.idem.snapshot(recIdempotency, idemID(id, ""))})
		}
		for _, wid := range s.accountWebhooks[id] {
			out = append(out, record{recWebhook, s.webhooks[wid].clone()})
		}
	}
	out = append(out, s.outboxRecords(hotOnly)...)
	out = append(out, s.eventLogRecords(hotOnly)...)
	out = append(out, switchRecords(recRouting, s.routing)...)
	out = append(out, switchRecords(recActiveWebhookLimit, s.activeWebhookLimit)...)
	out = append(out, s.grantRecords(hotOnly)...)
	out = append(out, s.accountCreateRecords(hotOnly)...)
	return append(out, switchRecords(recNextInLine, s.nextInLine)...)
}

// outboxRecords copies the webhook outbox: events, then deliveries, by id
// (unless hotOnly: hot.go keeps them one per key), then the garbage list and
// the app bridge's records.
func (s *state) outboxRecords(hotOnly bool) []record {
	if hotOnly {
		return append(s.garbageRecords(), s.appRecords(true)...)
	}
	out := []record{
		{recTable, s.events.snapshot(recEvent, "")},
		{recTable, s.deliveries.snapshot(recDelivery, "")},
	}
	out = append(out, s.garbageRecords()...)
	return append(out, s.appRecords(false)...)
}

// videoSource expands an accountVideos record into the account's videos in
// creation order.
type videoSource func(av accountVideos, emit func(Video) error) error

// memoryVideos expands from the copy alone.
func memoryVideos(av accountVideos, emit func(Video) error) error {
	for _, sv := range av.mem {
		if err := emit(sv.v); err != nil {
			return err
		}
	}
	return nil
}

// writeSnapshot writes records as a snapshot stream. Stand-ins for videos
// and tables expand from their copies alone without tx, merged with the
// state file as tx sees it with one.
func writeSnapshot(w io.Writer, records []record, tx *bbolt.Tx) error {
	videos := memoryVideos
	if tx != nil {
		videos = diskVideos(tx)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	sum := crc32.New(castagnoli)
	out := io.MultiWriter(bw, sum)
	if _, err := io.WriteString(out, snapshotMagic); err != nil {
		return fmt.Errorf("write snapshot header: %w", err)
	}
	n := uint64(0)
	emitVideo := func(v Video) error {
		n++
		return writeRecord(out, record{recVideo, v})
	}
	for _, r := range records {
		if av, ok := r.v.(accountVideos); ok {
			if err := videos(av, emitVideo); err != nil {
				return err
			}
			continue
		}
		if tr, ok := r.v.(tableRecords); ok {
			err := tr.walk(tx, func(v any) error {
				n++
				return writeRecord(out, record{tr.typ, v})
			})
			if err != nil {
				return err
			}
			continue
		}
		n++
		if err := writeRecord(out, r); err != nil {
			return err
		}
	}
	if err := writeRecord(bw, record{recEnd, trailer{Records: n, CRC32C: sum.Sum32()}}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("flush snapshot: %w", err)
	}
	return nil
}

// rawBody is a record body already encoded (copied from another stream).
type rawBody []byte

func writeRecord(w io.Writer, r record) error {
	// Map keys are sorted (a video's artifacts, say): Go's map order is random, and
	// every replica must write the same bytes for the same state.
	body, raw := r.v.(rawBody)
	if !raw {
		var enc bytes.Buffer
		if err := msgpack.NewEncoder(&enc).SetSortMapKeys(true).Encode(r.v); err != nil {
			return fmt.Errorf("encode snapshot record %d: %w", r.typ, err)
		}
		body = enc.Bytes()
	}
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+len(body))
	buf = append(buf, byte(r.typ))
	buf = binary.AppendUvarint(buf, uint64(len(body)))
	if _, err := w.Write(append(buf, body...)); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	return nil
}

// checksumReader hashes every byte read through it.
type checksumReader struct {
	r   *bufio.Reader
	sum hash.Hash32
}

func (c *checksumReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sum.Write(p[:n])
	return n, err
}

func (c *checksumReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.sum.Write([]byte{b})
	}
	return b, err
}

// maxRecord bounds one record so a corrupt length cannot allocate the machine away.
const maxRecord = 64 << 20

// readOpts says how readSnapshot builds a state.
type readOpts struct {
	// sink takes the finished videos (the disk tier being built) instead of
	// memory.
	sink *restoreSink
	// track makes the state keep dirty sets (hot.go), with every record the
	// stream holds in them: a state with a file writes them at its next
	// checkpoint.
	track bool
	// sched are task graphs kept one per key, joined to the stream's
	// scheduler record.
	sched []scheduler.VideoRecord
	// rawSched keeps the joined scheduler record as read instead of
	// restoring a scheduler from it: the state is only written out again
	// (WriteCheckpoint), and the record as read is what the scheduler that
	// wrote it would snapshot, without building its queues and indexes.
	rawSched bool
}

// readSnapshot reads a snapshot stream into a new state.
func readSnapshot(r io.Reader, opts readOpts) (*state, error) {
	s := newState()
	if opts.track {
		s.dirty = newDirty()
	}
	s.restoreTo, s.schedJoin, s.keepRawSched = opts.sink, opts.sched, opts.rawSched
	defer func() { s.restoreTo, s.schedJoin, s.keepRawSched = nil, nil, false }()
	if err := eachRecord(r, s.restoreRecord); err != nil {
		return nil, err
	}
	s.sched.SetNextInLine(s.nextInLine)
	s.voices.sync()
	return s, nil
}

// eachRecord checks a snapshot stream's header, calls fn with every record
// before the end record, and checks the end record's count and checksum.
func eachRecord(r io.Reader, fn func(t recordType, body []byte) error) error {
	br := &checksumReader{r: bufio.NewReaderSize(r, 1<<16), sum: crc32.New(castagnoli)}
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	if string(magic) != snapshotMagic {
		return fmt.Errorf("not a vidfarm snapshot (header %q)", magic)
	}
	for count := uint64(0); ; count++ {
		sum := br.sum.Sum32() // of every byte before this record
		t, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("snapshot ends after %d records without its end record: truncated", count)
		}
		if err != nil {
			return fmt.Errorf("read record type: %w", err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("read record length: %w", err)
		}
		if n > maxRecord {
			return fmt.Errorf("record of %d bytes exceeds %d", n, maxRecord)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("read record body: %w", err)
		}
		if recordType(t) == recEnd {
			return checkEnd(br, body, count, sum)
		}
		if err := fn(recordType(t), body); err != nil {
			return err
		}
	}
}

// checkEnd checks the end record against what was read, and that nothing follows it.
func checkEnd(br *checksumReader, body []byte, count uint64, sum uint32) error {
	var tr trailer
	if err := msgpack.Unmarshal(body, &tr); err != nil {
		return fmt.Errorf("decode end record: %w", err)
	}
	if tr.Records != count {
		return fmt.Errorf("snapshot holds %d records, its end record says %d", count, tr.Records)
	}
	if tr.CRC32C != sum {
		return fmt.Errorf("snapshot checksum %08x does not match %08x: corrupt", sum, tr.CRC32C)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return errors.New("data after the snapshot's end record")
	}
	return nil
}

func (s *state) restoreRecord(t recordType, body []byte) error {
	switch t {
	case recScheduler:
		var snap scheduler.Snapshot
		if err := msgpack.Unmarshal(body, &snap); err != nil {
			return fmt.Errorf("decode scheduler: %w", err)
		}
		if s.dirty.tracking() {
			for _, v := range snap.Videos {
				s.dirty.sched[scheduler.Changed{ID: v.Video.ID, Seq: v.Seq}] = s.dirty.gen
			}
		}
		if len(s.schedJoin) > 0 {
			snap.Videos = append(snap.Videos, s.schedJoin...)
			slices.SortFunc(snap.Videos, func(a, b scheduler.VideoRecord) int { return cmp.Compare(a.Seq, b.Seq) })
		}
		if s.keepRawSched {
			s.rawSched = &snap
			return nil
		}
		sched, err := scheduler.Restore(snap)
		if err != nil {
			return fmt.Errorf("restore scheduler: %w", err)
		}
		s.sched = sched
	case recNode:
		var n Node
		if err := msgpack.Unmarshal(body, &n); err != nil {
			return fmt.Errorf("decode node: %w", err)
		}
		s.nodes[n.ID] = &n
		s.nodeByCred[n.CredHash] = n.ID
		s.voices.add(n.Voices)
	case recMember:
		var m Member
		if err := msgpack.Unmarshal(body, &m); err != nil {
			return fmt.Errorf("decode member: %w", err)
		}
		s.members[m.ID] = &m
	case recAccount:
		var a Account
		if err := msgpack.Unmarshal(body, &a); err != nil {
			return fmt.Errorf("decode account: %w", err)
		}
		s.accounts[a.ID] = &a
	case recKey:
		var k Key
		if err := msgpack.Unmarshal(body, &k); err != nil {
			return fmt.Errorf("decode key: %w", err)
		}
		s.keys[k.ID] = &k
		s.keyByHash[k.Hash] = k.ID
	case recFolder:
		var f Folder
		if err := msgpack.Unmarshal(body, &f); err != nil {
			return fmt.Errorf("decode folder: %w", err)
		}
		s.folders[f.ID] = &f
		s.accountFolders[f.AccountID] = append(s.accountFolders[f.AccountID], f.ID)
	case recVideo:
		var v Video
		if err := msgpack.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("decode video: %w", err)
		}
		s.videoSeq++
		if s.restoreTo != nil && finished(&v) {
			return s.restoreTo.add(&v, s.videoSeq)
		}
		s.videos[v.ID] = &v
		s.seqOf[v.ID] = s.videoSeq
		s.accountVideos[v.AccountID] = append(s.accountVideos[v.AccountID], v.ID)
		s.touch(&v)
	case recIdempotency:
		var r Idempotency
		if err := msgpack.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("decode idempotency record: %w", err)
		}
		s.idem.restore(idemID(r.AccountID, r.Key), &r)
	case recAvatar:
		var a Avatar
		if err := msgpack.Unmarshal(body, &a); err != nil {
			return fmt.Errorf("decode avatar: %w", err)
		}
		s.avatars[a.ID] = &a
		s.accountAvatars[a.AccountID] = append(s.accountAvatars[a.AccountID], a.ID)
	case recSpeech:
		var sp Speech
		if err := msgpack.Unmarshal(body, &sp); err != nil {
			return fmt.Errorf("decode speech: %w", err)
		}
		s.speech[sp.ID] = &sp
		s.accountSpeech[sp.AccountID] = append(s.accountSpeech[sp.AccountID], sp.ID)
	case recWebhook, recEvent, recDelivery:
		return s.restoreOutboxRecord(t, body)
	case recGarbage:
		return s.restoreGarbage(body)
	case recEventLog, recLoggedEvent:
		return s.restoreEventLogRecord(t, body)
	case recRouting:
		return restoreSwitch(body, "routing", &s.routing)
	case recActiveWebhookLimit:
		return restoreSwitch(body, "active webhook limit", &s.activeWebhookLimit)
	case recGrant:
		return s.restoreGrant(body)
	case recNextInLine:
		return restoreSwitch(body, "next in line", &s.nextInLine)
	case recAccountCreate:
		return s.restoreAccountCreate(body)
	case recAsset:
		var as Asset
		if err := msgpack.Unmarshal(body, &as); err != nil {
			return fmt.Errorf("decode asset: %w", err)
		}
		s.assets[as.ID] = &as
		s.accountAssets[as.AccountID] = append(s.accountAssets[as.AccountID], as.ID)
	case recBrandKit:
		var k BrandKit
		if err := msgpack.Unmarshal(body, &k); err != nil {
			return fmt.Errorf("decode brand kit: %w", err)
		}
		s.kits[k.ID] = &k
		s.accountKits[k.AccountID] = append(s.accountKits[k.AccountID], k.ID)
	default:
		return s.restoreAppRecord(t, body)
	}
	return nil
}

func (s *state) restoreOutboxRecord(t recordType, body []byte) error {
	switch t {
	case recWebhook:
		var w Webhook
		if err := msgpack.Unmarshal(body, &w); err != nil {
			return fmt.Errorf("decode webhook: %w", err)
		}
		s.webhooks[w.ID] = &w
		s.accountWebhooks[w.AccountID] = append(s.accountWebhooks[w.AccountID], w.ID)
	case recEvent:
		var e Event
		if err := msgpack.Unmarshal(body, &e); err != nil {
			return fmt.Errorf("decode event: %w", err)
		}
		s.events.restore(e.ID, &e)
	case recDelivery:
		var d Delivery
		if err := msgpack.Unmarshal(body, &d); err != nil {
			return fmt.Errorf("decode delivery: %w", err)
		}
		s.deliveries.restore(d.ID(), &d)
		if d.State == DeliveryPending {
			s.pending.add(&d)
		}
	}
	return nil
}

// switchRecord is the snapshot record of a switch (StartRouting,
// ActiveWebhookLimit, NextInLine), present once it is on.
type switchRecord struct {
	On bool `msgpack:"on"`
}

// switchRecords is the record of type t of a switch, none while it is off.
func switchRecords(t recordType, on bool) []record {
	if !on {
		return nil
	}
	return []record{{t, switchRecord{On: true}}}
}

// restoreSwitch sets *on from a switch's record.
func restoreSwitch(body []byte, what string, on *bool) error {
	r, err := decodeRecord[switchRecord](body, what)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	*on = r.On
	return nil
}
