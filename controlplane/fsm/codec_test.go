package fsm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vmihailenco/msgpack/v5"
)

// Types with the same fields and tags as those with an encoder of their
// own in codec.go, but without it: what msgpack's reflection writes.
type (
	plainVideo  Video
	plainEvent  Event // its Video goes through Video's encoder, checked apart
	plainCreate CreateVideo
)

// TestCodecMatchesReflection holds the hand-written encoders to what
// msgpack's reflection writes with SetOmitEmpty(true), byte for byte, on
// values with every field set or left zero at random. A field added to
// one of these types and not to its encoder fails it.
func TestCodecMatchesReflection(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name  string
		fresh func() any    // a new value to fill
		hand  func(any) any // the value as codec.go encodes it
		plain func(any) any // the same value as reflection does
	}{
		{
			name:  "task graph",
			fresh: func() any { return new(scheduler.VideoRecord) },
			hand:  func(v any) any { return (*schedRecord)(v.(*scheduler.VideoRecord)) },
			plain: func(v any) any { return v },
		},
		{
			name:  "video",
			fresh: func() any { return new(Video) },
			hand:  func(v any) any { return v },
			plain: func(v any) any { return (*plainVideo)(v.(*Video)) },
		},
		{
			name:  "event",
			fresh: func() any { return new(Event) },
			hand:  func(v any) any { return v },
			plain: func(v any) any { return (*plainEvent)(v.(*Event)) },
		},
		{
			name:  "logged event",
			fresh: func() any { return new(LoggedEvent) },
			hand:  func(v any) any { return v },
			plain: func(v any) any {
				l := v.(*LoggedEvent)
				return &struct {
					Seq       uint64     `msgpack:"seq"`
					Event     plainEvent `msgpack:"event"`
					SpecByRef bool       `msgpack:"spec_ref,omitempty"`
				}{l.Seq, plainEvent(l.Event), l.SpecByRef}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range 3000 {
				v := c.fresh()
				if i > 0 { // the first is all zero
					fill(r, reflect.ValueOf(v).Elem(), 0)
				}
				got, want := encodeWith(t, c.hand(v)), encodeWith(t, c.plain(v))
				if !bytes.Equal(got, want) {
					t.Fatalf("value %d: codec.go wrote\n%x\nreflection writes\n%x\nfor %+v\n(a field added to the type and not to its encoder in codec.go?)", i, got, want, v)
				}
				back := c.fresh()
				if err := msgpack.Unmarshal(got, back); err != nil {
					t.Fatalf("value %d: decode: %v", i, err)
				}
			}
		})
	}
}

// TestLogCodecMatchesReflection holds the commands' hand-written encoders
// to msgpack.Marshal's reflection (no SetOmitEmpty: the Raft log's format),
// byte for byte, on values with every field set or left zero at random, and
// reads them back whole.
func TestLogCodecMatchesReflection(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		var c CreateVideo
		if i > 0 { // the first is all zero
			fill(r, reflect.ValueOf(&c).Elem(), 0)
		}
		got, err := msgpack.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		want, err := msgpack.Marshal((*plainCreate)(&c))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("value %d: codec.go wrote\n%x\nreflection writes\n%x\nfor %+v\n(a field added to CreateVideo or Spec and not to its encoder in codec.go?)", i, got, want, c)
		}
		var back CreateVideo
		if err := msgpack.Unmarshal(got, &back); err != nil {
			t.Fatalf("value %d: decode: %v", i, err)
		}
		if !reflect.DeepEqual(normalized(back), normalized(c)) {
			t.Fatalf("value %d: read back\n%+v\nwrote\n%+v", i, back, c)
		}
	}
}

// normalized is c with empty lists nil: msgpack leaves out an empty
// omitempty list and reads it back nil.
func normalized(c CreateVideo) CreateVideo {
	for _, l := range []*[]string{&c.Spec.FileAssetIDs, &c.Spec.ImageURLs} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return c
}

// TestCodecLeavesOutZeros checks what the encoders are for: a queued
// video's task graph without the keys of its zero fields.
func TestCodecLeavesOutZeros(t *testing.T) {
	rec := scheduler.VideoRecord{Video: scheduler.VideoInfo{ID: "vid_1", AccountID: "acct_1", Priority: 1},
		Mode: scheduler.ModeManual, Seq: 7, SubmittedAt: time.Unix(1700000000, 0), State: scheduler.VideoQueued,
		Tasks: []scheduler.TaskRecord{{Name: "render", Kind: scheduler.KindRender, State: scheduler.TaskReady,
			Req:     scheduler.Requirements{GPUs: 1, GPUMemoryGB: 24, Model: "m"},
			Percent: math.Copysign(0, -1)}}}
	hand, err := msgpack.Marshal((*schedRecord)(&rec))
	if err != nil {
		t.Fatal(err)
	}
	full, err := msgpack.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Lease", "Retry", "DoneNode", "FailedNodes", "Attempts", "Failure"} {
		if bytes.Contains(hand, []byte(k)) {
			t.Errorf("key %s written for a zero field", k)
		}
		if !bytes.Contains(full, []byte(k)) {
			t.Errorf("reflection without omitempty no longer writes %s: this test checks nothing", k)
		}
	}
	var back scheduler.VideoRecord
	if err := msgpack.Unmarshal(hand, &back); err != nil {
		t.Fatal(err)
	}
	if p := back.Tasks[0].Percent; p != 0 || !math.Signbit(p) {
		t.Fatalf("percent %v after decoding, want the negative zero written", p)
	}
	if !back.SubmittedAt.Equal(rec.SubmittedAt) {
		t.Fatalf("submitted at %v, want %v", back.SubmittedAt, rec.SubmittedAt)
	}
	back.SubmittedAt = rec.SubmittedAt
	if !reflect.DeepEqual(back, rec) {
		t.Fatalf("decoded %+v, want %+v", back, rec)
	}
}

// encodeWith encodes v with zero fields left out, and maps in key order
// (Go's order is random).
func encodeWith(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetOmitEmpty(true)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return buf.Bytes()
}

var timeType = reflect.TypeFor[time.Time]()

// fill sets v's exported fields at random, each left zero one time in
// three, nested values included.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	if r.IntN(3) == 0 && depth > 0 {
		return
	}
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<40)-1<<39, r.Int64N(1e9))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", r.IntN(1000)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(r.Uint64N(1 << 40))
	case reflect.Float64:
		v.SetFloat(r.Float64() * 100)
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i), depth+1)
		}
	case reflect.Slice:
		n := r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range r.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(r, k, 0)
			fill(r, e, 0)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	}
}

// TestLogCodecDecodesAsReflection holds CreateVideo's hand-written decoder
// to what msgpack's reflection reads from the same bytes: random commands
// as the log holds them, and maps the encoder never writes (unknown keys,
// nils, other integer widths, a repeated key, a nil spec), so a field added
// to CreateVideo or Spec and not to the decoder fails it, as does any
// difference in how a value is read.
func TestLogCodecDecodesAsReflection(t *testing.T) {
	check := func(name string, b []byte) {
		t.Helper()
		var got CreateVideo
		gotErr := msgpack.Unmarshal(b, &got)
		var want plainCreate
		wantErr := msgpack.Unmarshal(b, &want)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("%s: decoder error %v, reflection's %v", name, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, CreateVideo(want)) {
			t.Fatalf("%s: decoder read\n%+v\nreflection reads\n%+v", name, got, CreateVideo(want))
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		var c CreateVideo
		if i > 0 {
			fill(r, reflect.ValueOf(&c).Elem(), 0)
		}
		b, err := msgpack.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("value %d", i), b)
		if i < 200 { // cut short: both must fail
			check(fmt.Sprintf("value %d cut", i), b[:r.IntN(len(b))])
		}
	}
	odd := map[string]any{
		"future_field": []any{1, "x", map[string]any{"a": nil}},
		"video":        "vid_1",
		"account":      nil,
		"price":        int8(-3),
		"now":          uint16(65000),
		"body_hash":    []byte{1, 2, 3},
		"spec": map[string]any{
			"mode": nil, "prompt": "p", "duration": uint8(200), "negative_prompt": nil, "seed": int32(-7),
			"cfg_scale": float32(0.5), "assets": []string{"a", "b"}, "image_urls": nil, "unknown": true,
		},
	}
	for name, v := range map[string]any{
		"odd":       odd,
		"nil spec":  map[string]any{"video": "v", "spec": nil},
		"nil":       nil,
		"long hash": map[string]any{"body_hash": make([]byte, 33)},
	} {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		check(name, b)
	}
	// A repeated key: the last one counts.
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	for _, err := range []error{e.EncodeMapLen(2), e.EncodeString("video"), e.EncodeString("a"), e.EncodeString("video"), e.EncodeString("b")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	check("repeated key", buf.Bytes())
}
