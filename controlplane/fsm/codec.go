package fsm

import (
	"math"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vmihailenco/msgpack/v5"
)

// The records a checkpoint writes for every video (its task graph, the video,
// its video.created event) are encoded here by hand rather than by msgpack's
// reflection. Reflection spent 2.4 µs on a task graph and wrote 883 bytes,
// half of them the keys and values of fields left at zero (a queued video's
// tasks have no lease, no failures, no retry). Leaving zero fields out with
// msgpack's own SetOmitEmpty halved the bytes but doubled the time. These
// write exactly what msgpack's encoder writes with SetOmitEmpty(true), the
// same keys in the same order, so msgpack's decoder reads them as before,
// and so does a binary from before this encoder: a missing key decodes as
// the zero value it stood for. TestCodecMatchesReflection holds them to that,
// with every field set at random, so a field added to one of these types
// and not here fails it.

// fields writes msgpack maps: a function of a map's fields runs twice,
// first counting those that are not empty (the map's length comes first),
// then writing them. One fields serves a record and the maps inside it.
type fields struct {
	e        *msgpack.Encoder
	counting bool
	// keep writes zero fields too, as msgpack.Marshal writes a field whose
	// tag is not omitempty (the Raft log's commands; see keepZeros).
	keep bool
	n    int
	err  error
}

// keepZeros sets whether zero fields are written from here on and returns
// the setting it replaced, for the caller to put back.
func (f *fields) keepZeros(keep bool) bool {
	was := f.keep
	f.keep = keep
	return was
}

// encodeMap writes the map body describes.
func encodeMap(e *msgpack.Encoder, body func(*fields)) error {
	f := &fields{e: e}
	f.mapOf(body)
	return f.err
}

// count reports how many fields body writes.
func (f *fields) count(body func(*fields)) int {
	counting, n := f.counting, f.n
	f.counting, f.n = true, 0
	body(f)
	c := f.n
	f.counting, f.n = counting, n
	return c
}

func (f *fields) mapOf(body func(*fields)) {
	n := f.count(body)
	if f.err == nil {
		f.err = f.e.EncodeMapLen(n)
	}
	if f.err == nil {
		body(f)
	}
}

// key counts a field that is not empty (or any, while zeros are kept), or
// writes its key; it reports whether the caller writes the value.
func (f *fields) key(name string, empty bool) bool {
	return (!empty || f.keep) && f.putKey(name) // small enough to inline
}

// putKey counts a field, or writes its key.
func (f *fields) putKey(name string) bool {
	if f.err != nil {
		return false
	}
	if f.counting {
		f.n++
		return false
	}
	f.err = f.e.EncodeString(name)
	return f.err == nil
}

func (f *fields) str(name, v string) {
	if f.key(name, v == "") {
		f.err = f.e.EncodeString(v)
	}
}

// num, i64 and u64 write an int compactly and the 64-bit kinds in nine
// bytes, as msgpack does by default.
func (f *fields) num(name string, v int) {
	if f.key(name, v == 0) {
		f.err = f.e.EncodeInt(int64(v))
	}
}

func (f *fields) i64(name string, v int64) {
	if f.key(name, v == 0) {
		f.err = f.e.EncodeInt64(v)
	}
}

func (f *fields) u64(name string, v uint64) {
	if f.key(name, v == 0) {
		f.err = f.e.EncodeUint64(v)
	}
}

// float keeps a negative zero, which msgpack's omitempty drops: a task's
// percent can be one, and a restart must give back the state it wrote.
func (f *fields) float(name string, v float64) {
	if f.key(name, v == 0 && !math.Signbit(v)) {
		f.err = f.e.EncodeFloat64(v)
	}
}

func (f *fields) bool(name string, v bool) {
	if f.key(name, !v) {
		f.err = f.e.EncodeBool(v)
	}
}

func (f *fields) time(name string, v time.Time) {
	if f.key(name, v.IsZero()) {
		f.err = f.e.EncodeTime(v)
	}
}

func (f *fields) strs(name string, v []string) {
	if !f.key(name, len(v) == 0) {
		return
	}
	if f.err = f.e.EncodeArrayLen(len(v)); f.err != nil {
		return
	}
	for _, s := range v {
		if f.err = f.e.EncodeString(s); f.err != nil {
			return
		}
	}
}

func (f *fields) bytes(name string, v []byte) {
	if f.key(name, len(v) == 0) {
		f.err = f.e.EncodeBytes(v)
	}
}

// object is a field holding a struct, written as a map of its own; empty
// (and left out) when none of its fields is written.
func (f *fields) object(name string, body func(*fields)) {
	// While zeros are kept the map is written empty or not: no count.
	if f.err == nil && f.key(name, !f.keep && f.count(body) == 0) {
		f.mapOf(body)
	}
}

// value is a field msgpack's reflection writes: what is rare or small. v
// is a pointer or a map, which go into an interface without a copy.
func (f *fields) value(name string, empty bool, v any) {
	if f.key(name, empty) {
		f.err = f.e.Encode(v)
	}
}

// schedRecord is a task graph as a checkpoint writes it.
type schedRecord scheduler.VideoRecord

var _ msgpack.CustomEncoder = (*schedRecord)(nil)

// EncodeMsgpack writes the record as msgpack would, leaving out zero fields.
func (r *schedRecord) EncodeMsgpack(e *msgpack.Encoder) error {
	return encodeMap(e, func(f *fields) {
		f.object("Video", func(f *fields) {
			f.str("ID", r.Video.ID)
			f.str("AccountID", r.Video.AccountID)
			f.num("Priority", r.Video.Priority)
		})
		f.str("Mode", string(r.Mode))
		f.u64("Seq", r.Seq)
		f.time("SubmittedAt", r.SubmittedAt)
		f.str("State", string(r.State))
		f.bool("ScenesAdded", r.ScenesAdded)
		f.str("FailedTask", r.FailedTask)
		f.str("Failure", r.Failure)
		if f.key("Tasks", len(r.Tasks) == 0) {
			if f.err = f.e.EncodeArrayLen(len(r.Tasks)); f.err != nil {
				return
			}
			for i := range r.Tasks {
				t := &r.Tasks[i]
				f.mapOf(func(f *fields) { taskFields(f, t) })
			}
		}
	})
}

func taskFields(f *fields, t *scheduler.TaskRecord) {
	f.str("Name", t.Name)
	f.str("Kind", string(t.Kind))
	f.object("Req", func(f *fields) {
		f.num("GPUs", t.Req.GPUs)
		f.float("GPUMemoryGB", t.Req.GPUMemoryGB)
		f.str("Model", t.Req.Model)
		f.num("CPUSlots", t.Req.CPUSlots)
		f.strs("Tools", t.Req.Tools)
	})
	f.strs("Deps", t.Deps)
	f.bool("AwaitsScenes", t.AwaitsScenes)
	f.str("State", string(t.State))
	f.num("Attempts", t.Attempts)
	f.num("Failures", t.Failures)
	f.strs("FailedNodes", t.FailedNodes)
	f.float("Percent", t.Percent)
	f.time("ReadyAt", t.ReadyAt)
	f.value("Lease", t.Lease == nil, t.Lease)
	f.str("DoneNode", t.DoneNode)
	f.u64("DoneToken", t.DoneToken)
	f.value("Retry", t.Retry == nil, t.Retry)
}

var (
	_ msgpack.CustomEncoder = Video{}
	_ msgpack.CustomEncoder = Event{}
	_ msgpack.CustomEncoder = LoggedEvent{}
)

// EncodeMsgpack writes the video as msgpack would, leaving out zero fields.
// A value receiver, so that a Video msgpack cannot take the address of (a
// map's value) is encoded too.
func (v Video) EncodeMsgpack(e *msgpack.Encoder) error { return encodeMap(e, v.fields) }

func (v *Video) fields(f *fields) {
	f.str("id", v.ID)
	f.str("account", v.AccountID)
	f.object("spec", v.Spec.fields)
	f.str("status", v.Status)
	f.i64("charged", v.CreditsCharged)
	f.i64("price", v.Price)
	f.num("percent", v.Percent)
	f.str("error", v.ErrorMessage)
	f.bool("refunded", v.CreditsRefunded)
	f.i64("refunded_credits", v.RefundedCredits)
	f.bool("from_preview", v.RenderedFromPreview)
	f.object("outputs", func(f *fields) {
		o := &v.Outputs
		f.str("video", o.Video)
		f.str("video_no_captions", o.VideoNoCaptions)
		f.str("captions", o.Captions)
		f.str("captions_srt", o.CaptionsSRT)
		f.str("poster", o.Poster)
	})
	f.value("artifacts", len(v.Artifacts) == 0, v.Artifacts)
	f.i64("created_at", v.CreatedAt)
	f.i64("updated_at", v.UpdatedAt)
	f.i64("started_at", v.StartedAt)
	f.i64("finished_at", v.FinishedAt)
	// A slice would be copied into the interface: only when written.
	if f.key("timings", len(v.Timings) == 0) {
		f.err = f.e.Encode(v.Timings)
	}
	f.object("created_event", func(f *fields) {
		c := &v.CreatedEvent
		f.u64("seq", c.Seq)
		f.u64("queue_position", c.QueuePosition)
		f.str("wait_reason", c.WaitReason)
		f.str("wait_message", c.WaitMessage)
		f.num("duration", c.DurationSeconds)
		f.bool("preview", c.Preview)
	})
}

func (s *Spec) fields(f *fields) {
	f.str("mode", s.Mode)
	f.str("prompt", s.Prompt)
	f.str("name", s.Name)
	f.str("folder", s.FolderID)
	f.num("duration", s.DurationSeconds)
	s.optional(f)
}

// logFields writes s as msgpack.Marshal does, for a command in the Raft
// log: the fields its tags do not mark omitempty even when zero.
func (s *Spec) logFields(f *fields) {
	was := f.keepZeros(true)
	s.fields(f) // its omitempty ones are left to optional, below
	f.keepZeros(was)
}

// optional writes the fields of s its tags mark omitempty, zero or not
// left out whatever the caller keeps.
func (s *Spec) optional(f *fields) {
	was := f.keepZeros(false)
	f.str("avatar", s.AvatarID)
	f.str("voice", s.VoiceID)
	f.str("brand_kit", s.BrandKitID)
	f.str("style_id", s.StyleID)
	f.strs("assets", s.FileAssetIDs)
	f.str("orientation", s.Orientation)
	f.str("model", s.Model)
	f.str("operation", s.Operation)
	f.str("resolution", s.Resolution)
	f.str("aspect_ratio", s.AspectRatio)
	f.str("image_url", s.ImageURL)
	f.str("first_frame_url", s.FirstFrameURL)
	f.str("last_frame_url", s.LastFrameURL)
	f.strs("image_urls", s.ImageURLs)
	f.value("negative_prompt", s.NegativePrompt == nil, s.NegativePrompt)
	f.value("seed", s.Seed == nil, s.Seed)
	f.value("generate_audio", s.GenerateAudio == nil, s.GenerateAudio)
	f.value("style", s.Style == nil, s.Style)
	f.value("movement_amplitude", s.MovementAmplitude == nil, s.MovementAmplitude)
	f.value("cfg_scale", s.CfgScale == nil, s.CfgScale)
	f.value("camera_fixed", s.CameraFixed == nil, s.CameraFixed)
	f.value("auto_fix", s.AutoFix == nil, s.AutoFix)
	f.keepZeros(was)
}

// EncodeMsgpack writes the event as msgpack would, leaving out zero fields.
func (ev Event) EncodeMsgpack(e *msgpack.Encoder) error { return encodeMap(e, ev.fields) }

// EncodeMsgpack writes the logged event as msgpack would. Without it,
// msgpack reached the Event through an interface, which copied it.
func (l LoggedEvent) EncodeMsgpack(e *msgpack.Encoder) error {
	return encodeMap(e, func(f *fields) {
		f.u64("seq", l.Seq)
		f.object("event", l.Event.fields)
		f.bool("spec_ref", l.SpecByRef)
	})
}

func (ev *Event) fields(f *fields) {
	f.str("id", ev.ID)
	f.str("type", ev.Type)
	f.str("account", ev.AccountID)
	f.object("video", ev.Video.fields)
	f.i64("created", ev.Created)
	f.value("webhook", ev.Webhook == nil, ev.Webhook)
	f.u64("queue_position", ev.QueuePosition)
	f.str("wait_reason", ev.WaitReason)
	f.str("wait_message", ev.WaitMessage)
}

var _ msgpack.CustomEncoder = (*CreateVideo)(nil)

// EncodeMsgpack writes a create's command byte for byte as msgpack.Marshal's
// reflection does without SetOmitEmpty (the Raft log's format is unchanged:
// TestLogCodecMatchesReflection). Reflection boxed every omitempty field of
// the spec to test it for zero: 14 of a create's allocations.
func (c *CreateVideo) EncodeMsgpack(e *msgpack.Encoder) error {
	return encodeMap(e, func(f *fields) {
		f.keepZeros(true)
		f.str("video", c.VideoID)
		f.str("account", c.AccountID)
		f.object("spec", c.Spec.logFields)
		f.i64("price", c.Price)
		f.keepZeros(false)
		f.str("idem_key", c.IdempotencyKey) // the one omitempty field
		f.keepZeros(true)
		f.bytes("body_hash", c.BodyHash[:])
		f.i64("now", c.Now)
	})
}
