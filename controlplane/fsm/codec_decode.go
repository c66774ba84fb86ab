package fsm

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// A create's command is decoded by hand too: every replica decodes every
// create on the FSM's one goroutine, the stage all creates pass through one
// at a time, and msgpack's reflection spent about a tenth of that goroutine's
// time there. DecodeMsgpack reads what reflection reads, as reflection
// would (unknown keys skipped, a nil read as zero, the last of a repeated
// key kept): TestLogCodecDecodesAsReflection holds it to that.

var _ msgpack.CustomDecoder = (*CreateVideo)(nil)

// DecodeMsgpack reads a create's command as msgpack's reflection does.
func (c *CreateVideo) DecodeMsgpack(d *msgpack.Decoder) error {
	var buf keyBuf
	return buf.eachKey(d, func(key []byte) (err error) {
		switch string(key) {
		case "video":
			c.VideoID, err = d.DecodeString()
		case "account":
			c.AccountID, err = d.DecodeString()
		case "spec":
			err = c.Spec.decodeMsgpack(d, &buf)
		case "price":
			c.Price, err = d.DecodeInt64()
		case "idem_key":
			c.IdempotencyKey, err = d.DecodeString()
		case "body_hash":
			err = c.readBodyHash(d)
		case "now":
			c.Now, err = d.DecodeInt64()
		default:
			err = d.Skip()
		}
		return err
	})
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
func (s *Spec) decodeMsgpack(d *msgpack.Decoder, buf *keyBuf) error {
	return buf.eachKey(d, func(key []byte) (err error) {
		switch string(key) {
		case "mode":
			s.Mode, err = d.DecodeString()
		case "prompt":
			s.Prompt, err = d.DecodeString()
		case "name":
			s.Name, err = d.DecodeString()
		case "folder":
			s.FolderID, err = d.DecodeString()
		case "duration":
			s.DurationSeconds, err = d.DecodeInt()
		case "avatar":
			s.AvatarID, err = d.DecodeString()
		case "voice":
			s.VoiceID, err = d.DecodeString()
		case "brand_kit":
			s.BrandKitID, err = d.DecodeString()
		case "style_id":
			s.StyleID, err = d.DecodeString()
		case "orientation":
			s.Orientation, err = d.DecodeString()
		case "model":
			s.Model, err = d.DecodeString()
		case "operation":
			s.Operation, err = d.DecodeString()
		case "resolution":
			s.Resolution, err = d.DecodeString()
		case "aspect_ratio":
			s.AspectRatio, err = d.DecodeString()
		case "image_url":
			s.ImageURL, err = d.DecodeString()
		case "first_frame_url":
			s.FirstFrameURL, err = d.DecodeString()
		case "last_frame_url":
			s.LastFrameURL, err = d.DecodeString()
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
