package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// The snapshot stream: a magic line, then records, each a type byte, a uvarint
// length and a msgpack body. Records come in a fixed order (accounts by id, then each
// account's keys, folders and videos in creation order), so every replica writes the
// same bytes for the same state.
const snapshotMagic = "vidfarm-fsm-snapshot-v1\n"

type recordType byte

const (
	recMeta recordType = iota + 1
	recAccount
	recKey
	recFolder
	recVideo
	recIdempotency
)

type meta struct {
	LastQueueSeq uint64 `msgpack:"last_queue_seq"`
}

type record struct {
	typ recordType
	v   any
}

// records copies the whole state into a list of records; the caller holds the read lock.
func (s *state) records() []record {
	out := make([]record, 0, 1+len(s.accounts)+len(s.keys)+len(s.folders)+len(s.videos)+len(s.idem))
	out = append(out, record{recMeta, meta{LastQueueSeq: s.lastQueueSeq}})
	ids := make([]string, 0, len(s.accounts))
	for id := range s.accounts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	keysByAccount := map[string][]*Key{}
	for _, k := range s.keys {
		keysByAccount[k.AccountID] = append(keysByAccount[k.AccountID], k)
	}
	idemByAccount := map[string][]*Idempotency{}
	for _, r := range s.idem {
		idemByAccount[r.AccountID] = append(idemByAccount[r.AccountID], r)
	}
	for _, id := range ids {
		out = append(out, record{recAccount, *s.accounts[id]})
		ks := keysByAccount[id]
		slices.SortFunc(ks, func(a, b *Key) int { return compareStrings(a.ID, b.ID) })
		for _, k := range ks {
			out = append(out, record{recKey, *k})
		}
		for _, fid := range s.accountFolders[id] {
			out = append(out, record{recFolder, *s.folders[fid]})
		}
		for _, vid := range s.accountVideos[id] {
			out = append(out, record{recVideo, s.videos[vid].Clone()})
		}
		rs := idemByAccount[id]
		slices.SortFunc(rs, func(a, b *Idempotency) int { return compareStrings(a.Key, b.Key) })
		for _, r := range rs {
			out = append(out, record{recIdempotency, r.clone()})
		}
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type snapshot struct {
	records []record
}

// Persist streams the records to the sink.
func (sn *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, sn.records); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release is a no-op: the snapshot owns copies.
func (sn *snapshot) Release() {}

func writeSnapshot(w io.Writer, records []record) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(snapshotMagic); err != nil {
		return fmt.Errorf("write snapshot header: %w", err)
	}
	var lenBuf [binary.MaxVarintLen64]byte
	for _, r := range records {
		body, err := msgpack.Marshal(r.v)
		if err != nil {
			return fmt.Errorf("encode snapshot record %d: %w", r.typ, err)
		}
		if err := bw.WriteByte(byte(r.typ)); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
		n := binary.PutUvarint(lenBuf[:], uint64(len(body)))
		if _, err := bw.Write(lenBuf[:n]); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
		if _, err := bw.Write(body); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("flush snapshot: %w", err)
	}
	return nil
}

// maxRecord bounds one record so a corrupt length cannot allocate the machine away.
const maxRecord = 64 << 20

func readSnapshot(r io.Reader) (*state, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	if string(magic) != snapshotMagic {
		return nil, fmt.Errorf("not a vidfarm snapshot (header %q)", magic)
	}
	s := newState()
	for {
		t, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read record type: %w", err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("read record length: %w", err)
		}
		if n > maxRecord {
			return nil, fmt.Errorf("record of %d bytes exceeds %d", n, maxRecord)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, fmt.Errorf("read record body: %w", err)
		}
		if err := s.restoreRecord(recordType(t), body); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *state) restoreRecord(t recordType, body []byte) error {
	switch t {
	case recMeta:
		var m meta
		if err := msgpack.Unmarshal(body, &m); err != nil {
			return fmt.Errorf("decode meta: %w", err)
		}
		s.lastQueueSeq = m.LastQueueSeq
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
		s.videos[v.ID] = &v
		s.accountVideos[v.AccountID] = append(s.accountVideos[v.AccountID], v.ID)
		if v.Status == StatusQueued && v.QueueSeq != 0 {
			s.queue.push(v.QueueSeq)
		}
	case recIdempotency:
		var r Idempotency
		if err := msgpack.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("decode idempotency record: %w", err)
		}
		s.idem[idemKey{account: r.AccountID, key: r.Key}] = &r
	default:
		return fmt.Errorf("unknown snapshot record type %d", t)
	}
	return nil
}
