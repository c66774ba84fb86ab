package fsm

import (
	"reflect"
	"testing"
)

// Every registered command names its own type byte, has a unique name, and
// round-trips through Encode and Decode; the holes do not decode.
func TestRegistry(t *testing.T) {
	names := map[string]MessageType{}
	n := 0
	for i, e := range registry {
		if e.new == nil {
			if e.name != "" || e.apply != nil {
				t.Errorf("type %d: half an entry", i)
			}
			continue
		}
		n++
		c := e.new()
		if c.Type() != MessageType(i) {
			t.Errorf("registry[%d] makes %T, whose type is %d", i, c, c.Type())
		}
		if prev, dup := names[e.name]; dup {
			t.Errorf("name %q is both type %d and %d", e.name, prev, i)
		}
		names[e.name] = MessageType(i)
		if MessageType(i).String() != e.name {
			t.Errorf("type %d prints as %q, want %q", i, MessageType(i), e.name)
		}
		raw, err := Encode(c)
		if err != nil {
			t.Fatalf("encode %s: %v", e.name, err)
		}
		back, err := Decode(raw)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Errorf("%s: decoded %#v (%v), want %#v", e.name, back, err, c)
		}
	}
	if n != 40 {
		t.Errorf("%d commands registered, want 40: a new one also needs a line in controlplane/README.md", n)
	}
	for _, hole := range []byte{0, 9, 10, 11, 26, 27, 35, 36, 37, 42, 43, 44, 45, 53, 255} {
		if _, err := Decode([]byte{hole, 0x80}); err == nil {
			t.Errorf("type %d decodes; it is a hole", hole)
		}
	}
}
