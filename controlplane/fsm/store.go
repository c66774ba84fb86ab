package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The disk tier. A node opened with Open keeps finished videos (the part of
// the state that grows with history) in a bbolt file beside its Raft log and
// only the hot part in memory: accounts, keys, the queue, unfinished videos,
// nodes, webhooks and the outboxes. The file is written only at checkpoints,
// which are the FSM's snapshots: one bbolt transaction holds the videos that
// finished since the last one, the hot part as a snapshot stream and the
// Raft index both reflect. The file is therefore always exactly the state at
// one index, never ahead of it, and a restart loads the hot part, opens the
// file and replays only the log entries after that index. Why bbolt and not
// SQLite or go-memdb is in controlplane/README.md ("State on disk").
const (
	bucketMeta   = "meta"           // metaIndex, metaExtra
	bucketVideos = "videos"         // video id → seq (8 bytes, big endian) + msgpack video
	bucketList   = "account_videos" // listKey → video id
	bucketCounts = "video_counts"   // account id → msgpack counts of its videos on disk
	bucketHot    = "hot"            // chunk number (4 bytes) → part of the hot snapshot stream

	metaIndex  = "applied_index"
	metaExtra  = "extra"
	metaFormat = "format"
	// storeFormat changes when the file's layout does; a file of another
	// format is refused rather than misread. v2 keeps unfinished videos,
	// task graphs, idempotency records, webhook events and deliveries one
	// per key (hot.go); v1 kept them in the hot stream, which later formats
	// still read, so a v1 file is loaded and becomes current at its first
	// checkpoint. v3 adds the tables' index buckets (table.go), which
	// opening a v2 file builds. v4 keeps the app bridge's outbox one entry
	// per key (appdb_outbox.go); a v3 file holds it in the hot stream, which
	// is read as before, and its first checkpoint moves it. v5 keys the task
	// graphs by sequence number (schedKey), which opening an older file
	// does. An older binary refuses a newer file.
	storeFormat   = "vidfarm-state-v5"
	storeFormatV4 = "vidfarm-state-v4"
	storeFormatV3 = "vidfarm-state-v3"
	storeFormatV2 = "vidfarm-state-v2"
	storeFormatV1 = "vidfarm-state-v1"

	hotChunk = 1 << 20
)

// Every video on disk is listed three times per account: under "" (all of the
// account's videos), "s:"+status and "f:"+folder, each in creation order, so a
// filtered listing reads only what it shows.
func listTags(v *Video) []string {
	tags := []string{"", "s:" + v.Status}
	if v.Spec.FolderID != "" {
		tags = append(tags, "f:"+v.Spec.FolderID)
	}
	return tags
}

// countTags are the tags a video is counted under: listTags and its folder and
// status together, so the total of any filter the API offers is one lookup.
func countTags(v *Video) []string {
	tags := listTags(v)
	if v.Spec.FolderID != "" {
		tags = append(tags, "fs:"+v.Spec.FolderID+"|"+v.Status)
	}
	return tags
}

// filterTag is the list an API filter reads, and the count that is its total.
func filterTag(status, folder string) (list, count string) {
	switch {
	case status != "" && folder != "":
		return "f:" + folder, "fs:" + folder + "|" + status
	case status != "":
		return "s:" + status, "s:" + status
	case folder != "":
		return "f:" + folder, "f:" + folder
	}
	return "", ""
}

func listPrefix(account, tag string) []byte {
	k := make([]byte, 0, len(account)+len(tag)+2)
	k = append(k, account...)
	k = append(k, 0)
	k = append(k, tag...)
	return append(k, 0)
}

func listKey(account, tag string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(listPrefix(account, tag), seq)
}

// storeExtra is what the hot snapshot stream does not say: the last video
// sequence number, and which videos on disk still hold intermediate blobs
// (from a snapshot older than command type 48; see sweep.go). Seqs numbered
// the videos in the hot stream of a v1 file.
type storeExtra struct {
	VideoSeq  uint64            `msgpack:"video_seq"`
	Seqs      map[string]uint64 `msgpack:"seqs,omitempty"`
	Leftovers []string          `msgpack:"leftovers"`
	// Tables counts each table's records (table.go), by bucket.
	Tables map[string]int `msgpack:"tables,omitempty"`
}

// storeMmapSize is the address space the state file is mapped with at open,
// as etcd maps its backend (10 GiB there): address space, not memory. A
// file that outgrows its mapping is mapped again, and bbolt first copies
// every page the writing transaction holds in memory out of the old mapping
// and waits for every reader: under create load from an empty file, each
// doubling of the mapping (32 KiB, 64 KiB, … 1 GiB) landed in a checkpoint
// and the copies were a quarter of all the server allocated.
const storeMmapSize = 8 << 30

type store struct {
	db   *bbolt.DB
	path string
}

// pagesWritten is how many pages the file's write transactions have
// written since it was opened.
func (st *store) pagesWritten() int64 {
	stats := st.db.Stats()
	return stats.TxStats.GetPageCount()
}

func openStore(path string) (*store, error) {
	opts := *bbolt.DefaultOptions
	// A second node on the same data directory says why it cannot start.
	opts.Timeout = 2 * time.Second
	// The free list is written with each commit (bbolt's default): rebuilding
	// it at open instead, as etcd does, reads every page of the file, and a
	// restart must not take longer as the history grows.
	opts.FreelistType = bbolt.FreelistMapType
	opts.InitialMmapSize = storeMmapSize
	db, err := bbolt.Open(path, 0o600, &opts)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open state store %s: locked by another process (is a node already running on this data directory?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open state store %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		buckets := []string{bucketMeta, bucketVideos, bucketList, bucketCounts, bucketHot, bucketHotVideos, bucketHotSched}
		tables := newState().tables()
		for _, t := range tables {
			buckets = append(buckets, t.buckets()...)
		}
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		meta := tx.Bucket([]byte(bucketMeta))
		switch f := meta.Get([]byte(metaFormat)); {
		case f == nil:
			return meta.Put([]byte(metaFormat), []byte(storeFormat))
		case string(f) == storeFormatV2 || string(f) == storeFormatV3 || string(f) == storeFormatV4:
			if string(f) == storeFormatV2 {
				for _, t := range tables {
					if err := t.buildIndexes(tx); err != nil {
						return fmt.Errorf("upgrade from %s: %w", f, err)
					}
				}
			}
			if err := rekeySched(tx); err != nil {
				return fmt.Errorf("upgrade from %s: %w", f, err)
			}
			return meta.Put([]byte(metaFormat), []byte(storeFormat))
		case string(f) != storeFormat && string(f) != storeFormatV1:
			return fmt.Errorf("state store %s has format %q; this binary reads %q", path, f, storeFormat)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare state store %s: %w", path, err)
	}
	return &store{db: db, path: path}, nil
}

func (st *store) close() error { return st.db.Close() }

// diskVideo is one video on its way to disk.
type diskVideo struct {
	v   *Video
	seq uint64
	// listed is whether the video is already in the lists and counts (a video
	// read back from disk to be changed).
	listed bool
	// orig is the video in memory v was copied from at a checkpoint: it is
	// dropped from memory once written, unless something replaced it meanwhile.
	orig *Video
}

func encodeDiskVideo(v *Video, seq uint64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(binary.BigEndian.AppendUint64(nil, seq))
	if err := msgpack.NewEncoder(&buf).SetSortMapKeys(true).Encode(v); err != nil {
		return nil, fmt.Errorf("encode video %s: %w", v.ID, err)
	}
	return buf.Bytes(), nil
}

func decodeDiskVideo(b []byte) (*Video, uint64, error) {
	if len(b) < 8 {
		return nil, 0, errors.New("video record shorter than its sequence number")
	}
	var v Video
	if err := msgpack.Unmarshal(b[8:], &v); err != nil {
		return nil, 0, fmt.Errorf("decode video: %w", err)
	}
	return &v, binary.BigEndian.Uint64(b[:8]), nil
}

// putVideos writes videos, their list entries and counts in tx; counts is
// updated in place. It returns the bytes of the video records.
func putVideos(tx *bbolt.Tx, videos []diskVideo, counts map[string]videoCounts) (int64, error) {
	vb, lb := tx.Bucket([]byte(bucketVideos)), tx.Bucket([]byte(bucketList))
	// Lists grow at the end of each account's range: pages split full, not
	// in half (bbolt's default suits random keys, as video ids are).
	lb.FillPercent = 0.9
	touched := map[string]bool{}
	var written int64
	// Keys are put in their order, the videos' and then the lists': bbolt
	// keeps a node's keys in one sorted slice until the transaction
	// commits, so each key put out of order shifts every key after it. The
	// videos come in a map's order; 200,000 of them in one checkpoint (a
	// checkpoint after failed ones, or a fill) took 91 s, nearly all of it
	// moving memory, where sorted they take about a second.
	order := make([]int, len(videos))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(videos[a].v.ID, videos[b].v.ID) })
	type listed struct{ key, id []byte }
	var lists []listed
	for _, i := range order {
		d := videos[i]
		body, err := encodeDiskVideo(d.v, d.seq)
		if err != nil {
			return 0, err
		}
		written += int64(len(body))
		if err := vb.Put([]byte(d.v.ID), body); err != nil {
			return 0, fmt.Errorf("store video %s: %w", d.v.ID, err)
		}
		if d.listed {
			continue
		}
		for _, tag := range listTags(d.v) {
			lists = append(lists, listed{listKey(d.v.AccountID, tag, d.seq), []byte(d.v.ID)})
		}
		c := counts[d.v.AccountID]
		if c == nil {
			c = videoCounts{}
			counts[d.v.AccountID] = c
		}
		for _, tag := range countTags(d.v) {
			c[tag]++
		}
		touched[d.v.AccountID] = true
	}
	slices.SortFunc(lists, func(a, b listed) int { return bytes.Compare(a.key, b.key) })
	for _, l := range lists {
		if err := lb.Put(l.key, l.id); err != nil {
			return 0, fmt.Errorf("list video %s: %w", l.id, err)
		}
	}
	cb := tx.Bucket([]byte(bucketCounts))
	for account := range touched {
		b, err := msgpack.Marshal(counts[account])
		if err != nil {
			return 0, fmt.Errorf("encode counts of %s: %w", account, err)
		}
		if err := cb.Put([]byte(account), b); err != nil {
			return 0, fmt.Errorf("store counts of %s: %w", account, err)
		}
	}
	return written, nil
}

// putHot replaces the hot stream, the extra and the index: the end of a
// checkpoint.
func putHot(tx *bbolt.Tx, index uint64, hot []byte, extra storeExtra) error {
	if err := tx.DeleteBucket([]byte(bucketHot)); err != nil {
		return fmt.Errorf("clear hot state: %w", err)
	}
	hb, err := tx.CreateBucket([]byte(bucketHot))
	if err != nil {
		return fmt.Errorf("clear hot state: %w", err)
	}
	for i := 0; len(hot) > 0; i++ {
		n := min(len(hot), hotChunk)
		if err := hb.Put(binary.BigEndian.AppendUint32(nil, uint32(i)), hot[:n]); err != nil {
			return fmt.Errorf("store hot state: %w", err)
		}
		hot = hot[n:]
	}
	eb, err := msgpack.Marshal(extra)
	if err != nil {
		return fmt.Errorf("encode store extra: %w", err)
	}
	meta := tx.Bucket([]byte(bucketMeta))
	if err := meta.Put([]byte(metaExtra), eb); err != nil {
		return err
	}
	// A v1 file's hot records have all been written one per key by now: the
	// first state loaded from it held them all dirty.
	if err := meta.Put([]byte(metaFormat), []byte(storeFormat)); err != nil {
		return err
	}
	return meta.Put([]byte(metaIndex), binary.BigEndian.AppendUint64(nil, index))
}

// load reads the state the file holds: the hot part in memory, the rest left
// on disk. It returns nil and 0 for a file that holds none yet.
func (st *store) load() (*state, uint64, error) {
	var (
		s     *state
		index uint64
	)
	err := st.db.View(func(tx *bbolt.Tx) error {
		var err error
		s, index, err = loadState(tx, readOpts{track: true})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("load state from %s: %w", st.path, err)
	}
	return s, index, nil
}

// loadState reads the hot part of the state tx holds, and its index; nil and
// 0 for a file that holds none yet. With opts.track the state keeps dirty
// sets, holding whatever a v1 file kept in its hot stream; opts.rawSched is
// for a state only written out again.
func loadState(tx *bbolt.Tx, opts readOpts) (*state, uint64, error) {
	meta := tx.Bucket([]byte(bucketMeta))
	b := meta.Get([]byte(metaIndex))
	if len(b) != 8 {
		return nil, 0, nil
	}
	index := binary.BigEndian.Uint64(b)
	hot, extra, err := readHot(tx)
	if err != nil {
		return nil, 0, err
	}
	sched, err := loadSchedRecords(tx)
	if err != nil {
		return nil, 0, err
	}
	opts.sched = sched
	s, err := readSnapshot(hot, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("hot state: %w", err)
	}
	s.videoSeq = extra.VideoSeq
	for id := range s.videos { // a v1 file's, from its hot stream
		seq, ok := extra.Seqs[id]
		if !ok {
			return nil, 0, fmt.Errorf("video %s has no sequence number", id)
		}
		s.seqOf[id] = seq
	}
	if err := loadHotRecords(tx, s, extra); err != nil {
		return nil, 0, err
	}
	for _, id := range extra.Leftovers {
		s.diskLeftovers[id] = struct{}{}
	}
	err = tx.Bucket([]byte(bucketCounts)).ForEach(func(k, v []byte) error {
		var c videoCounts
		if err := msgpack.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("decode counts of %s: %w", k, err)
		}
		s.diskCounts[string(k)] = c
		return nil
	})
	return s, index, err
}

// readHot returns the hot snapshot stream and the extra that tx holds.
func readHot(tx *bbolt.Tx) (io.Reader, storeExtra, error) {
	var extra storeExtra
	if err := msgpack.Unmarshal(tx.Bucket([]byte(bucketMeta)).Get([]byte(metaExtra)), &extra); err != nil {
		return nil, extra, fmt.Errorf("decode store extra: %w", err)
	}
	var chunks []io.Reader
	err := tx.Bucket([]byte(bucketHot)).ForEach(func(_, v []byte) error {
		chunks = append(chunks, bytes.NewReader(v))
		return nil
	})
	return io.MultiReader(chunks...), extra, err
}

// video reads one video from disk.
func (st *store) video(id string) (*Video, uint64, bool) {
	var (
		v   *Video
		seq uint64
	)
	err := st.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketVideos)).Get([]byte(id))
		if b == nil {
			return nil
		}
		var err error
		v, seq, err = decodeDiskVideo(b)
		return err
	})
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return nil, 0, false // a read racing the node's shutdown
	}
	if err != nil {
		// The file was written by this binary through checksummed pages; a
		// record it cannot read means the replica cannot be trusted.
		panic(fmt.Sprintf("fsm: state store %s: video %s: %v", st.path, id, err))
	}
	return v, seq, v != nil
}

// removeStore deletes a state file; one that is not there is no error.
func removeStore(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
