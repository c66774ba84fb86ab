package fsm

import (
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// A create's command is decoded by hand too: every replica decodes every
// create on the FSM's one goroutine, the stage all creates pass through one
// at a time, and msgpack's reflection spent about a tenth of that goroutine's
// time there. DecodeMsgpack reads what reflection reads, as reflection
// would (unknown keys skipped, a nil read as zero, the last of a repeated
// key kept): TestLogCodecDecodesAsReflection holds it to that.
//
// Its strings share one allocation (stringArena): a queued video keeps its
// command's strings until it finishes, and every garbage collection marks
// each of them, for every video in the queue (BenchmarkQueueMark).

var _ msgpack.CustomDecoder = (*CreateVideo)(nil)

// DecodeMsgpack reads a create's command as msgpack's reflection does.
func (c *CreateVideo) DecodeMsgpack(d *msgpack.Decoder) error {
	scratch := decodeScratch.Get().(*createScratch)
	defer scratch.put()
	buf, strs := &scratch.keys, &scratch.strs
	err := buf.eachKey(d, func(key []byte) (err error) {
		switch string(key) {
		case "video":
			err = strs.read(d, &c.VideoID)
		case "account":
			err = strs.read(d, &c.AccountID)
		case "spec":
			err = c.Spec.decodeMsgpack(d, buf, strs)
		case "price":
			c.Price, err = d.DecodeInt64()
		case "idem_key":
			err = strs.read(d, &c.IdempotencyKey)
		case "body_hash":
			err = c.readBodyHash(d)
		case "now":
			c.Now, err = d.DecodeInt64()
		default:
			err = d.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	strs.finish()
	return nil
}

// readBodyHash reads the hash into its array, as reflection does, rather
// than into a slice first.
func (c *CreateVideo) readBodyHash(d *msgpack.Decoder) error {
	n, err := d.DecodeBytesLen()
	switch {
	case err != nil || n < 0:
		return err
	case n > len(c.BodyHash):
		return fmt.Errorf("%d bytes, want at most %d", n, len(c.BodyHash))
	}
	return d.ReadFull(c.BodyHash[:n])
}

// decodeMsgpack reads s from a map, as reflection does; buf is the
// caller's, for the keys.
func (s *Spec) decodeMsgpack(d *msgpack.Decoder, buf *keyBuf, strs *stringArena) error {
	return buf.eachKey(d, func(key []byte) (err error) {
		switch string(key) {
		case "mode":
			err = strs.read(d, &s.Mode)
		case "prompt":
			err = strs.read(d, &s.Prompt)
		case "name":
			err = strs.read(d, &s.Name)
		case "folder":
			err = strs.read(d, &s.FolderID)
		case "duration":
			s.DurationSeconds, err = d.DecodeInt()
		case "avatar":
			err = strs.read(d, &s.AvatarID)
		case "voice":
			err = strs.read(d, &s.VoiceID)
		case "brand_kit":
			err = strs.read(d, &s.BrandKitID)
		case "style_id":
			err = strs.read(d, &s.StyleID)
		case "orientation":
			err = strs.read(d, &s.Orientation)
		case "model":
			err = strs.read(d, &s.Model)
		case "operation":
			err = strs.read(d, &s.Operation)
		case "resolution":
			err = strs.read(d, &s.Resolution)
		case "aspect_ratio":
			err = strs.read(d, &s.AspectRatio)
		case "image_url":
			err = strs.read(d, &s.ImageURL)
		case "first_frame_url":
			err = strs.read(d, &s.FirstFrameURL)
		case "last_frame_url":
			err = strs.read(d, &s.LastFrameURL)
		// The lists and the advanced fields are rare: reflection reads
		// them, when they are there.
		case "assets":
			err = d.Decode(&s.FileAssetIDs)
		case "image_urls":
			err = d.Decode(&s.ImageURLs)
		case "negative_prompt":
			err = d.Decode(&s.NegativePrompt)
		case "seed":
			err = d.Decode(&s.Seed)
		case "generate_audio":
			err = d.Decode(&s.GenerateAudio)
		case "style":
			err = d.Decode(&s.Style)
		case "movement_amplitude":
			err = d.Decode(&s.MovementAmplitude)
		case "cfg_scale":
			err = d.Decode(&s.CfgScale)
		case "camera_fixed":
			err = d.Decode(&s.CameraFixed)
		case "auto_fix":
			err = d.Decode(&s.AutoFix)
		default:
			err = d.Skip()
		}
		return err
	})
}

// stringArena reads a command's strings into one buffer and hands them out,
// at the end, as parts of one string: one allocation of exactly their bytes
// instead of one per string. A string is set only by finish, so a field read
// twice keeps the last, as reflection does.
type stringArena struct {
	buf     []byte
	targets []arenaTarget
}

// createScratch is what decoding a create needs for a while, kept in a
// pool: on the decoder's stack it would escape, an allocation per create.
type createScratch struct {
	keys keyBuf
	strs stringArena
}

var decodeScratch = sync.Pool{New: func() any {
	return &createScratch{strs: stringArena{buf: make([]byte, 0, 512), targets: make([]arenaTarget, 0, 24)}}
}}

// put returns the scratch to the pool, unless a long prompt grew it.
func (s *createScratch) put() {
	if cap(s.strs.buf) > 64<<10 {
		return
	}
	clear(s.strs.targets) // they point into the decoded command
	s.strs.buf, s.strs.targets = s.strs.buf[:0], s.strs.targets[:0]
	decodeScratch.Put(s)
}

type arenaTarget struct {
	dst      *string
	from, to int
}

// read reads a string value (a string, or bytes; nil is "", as DecodeString
// reads them) for *to.
func (a *stringArena) read(d *msgpack.Decoder, to *string) error {
	n, err := d.DecodeBytesLen()
	if err != nil {
		return err
	}
	from := len(a.buf)
	// In pieces, so that a length no entry holds fails at the end of the
	// entry rather than allocating what it claims.
	for left := n; left > 0; {
		k := min(left, 64<<10)
		a.buf = append(a.buf, make([]byte, k)...)
		if err := d.ReadFull(a.buf[len(a.buf)-k:]); err != nil {
			return err
		}
		left -= k
	}
	a.targets = append(a.targets, arenaTarget{dst: to, from: from, to: len(a.buf)})
	return nil
}

// finish sets every string read.
func (a *stringArena) finish() {
	all := string(a.buf)
	for _, t := range a.targets {
		*t.dst = all[t.from:t.to]
	}
}

// keyBuf holds a map's key while its value is read: DecodeString would
// allocate every key, more allocations than the values' own.
type keyBuf [32]byte

// eachKey reads a map, handing each key to field, which reads its value. A
// nil map has none, as reflection leaves the struct it stands for.
func (b *keyBuf) eachKey(d *msgpack.Decoder, field func(key []byte) error) error {
	n, err := d.DecodeMapLen()
	if err != nil {
		return err
	}
	for range n { // -1 for nil
		key, err := b.read(d)
		if err != nil {
			return err
		}
		if err := field(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// read reads a key as reflection does (a string, or bytes; nil is ""). One
// longer than the buffer, which no field has, is read whole all the same.
func (b *keyBuf) read(d *msgpack.Decoder) ([]byte, error) {
	n, err := d.DecodeBytesLen()
	if err != nil || n <= 0 {
		return nil, err
	}
	var key []byte
	if n <= len(b) {
		key = b[:n]
	} else {
		key = make([]byte, n)
	}
	return key, d.ReadFull(key)
}
