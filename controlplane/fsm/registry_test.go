package fsm

import (
	"fmt"
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
	if n != 64 {
		t.Errorf("%d commands registered, want 64: a new one also needs a line in controlplane/README.md", n)
	}
	for _, hole := range []byte{0, 9, 10, 11, 26, 27, 35, 36, 37, 42, 43, 44, 45, 255} {
		if _, err := Decode([]byte{hole, 0x80}); err == nil {
			t.Errorf("type %d decodes; it is a hole", hole)
		}
	}
}

// declared is the answer each payload declares (its answers(R)), which the
// compiler finds from the payload alone.
var declared = []answerType{
	answerOf(&CreateAccount{}), answerOf(&CreateKey{}), answerOf(&RevokeKey{}), answerOf(&GrantCredits{}),
	answerOf(&SetPlan{}), answerOf(&CreateFolder{}), answerOf(&CreateVideo{}), answerOf(&RenderPreview{}),
	answerOf(&FailVideo{}), answerOf(&ExpireIdempotency{}), answerOf(&RegisterNode{}),
	answerOf(&NodeHeartbeat{}), answerOf(&LeaseTask{}), answerOf(&TaskProgress{}), answerOf(&CompleteTask{}),
	answerOf(&FailTask{}), answerOf(&ExpireLeases{}), answerOf(&DeregisterNode{}), answerOf(&CreateWebhook{}),
	answerOf(&DeleteWebhook{}), answerOf(&RecordDelivery{}), answerOf(&PruneDeliveries{}),
	answerOf(&CreateAsset{}), answerOf(&CompleteAsset{}), answerOf(&DeleteAsset{}), answerOf(&CreateBrandKit{}),
	answerOf(&DeleteBrandKit{}), answerOf(&CreateAvatar{}), answerOf(&CreateSpeech{}), answerOf(&AppRows{}),
	answerOf(&SetAppExport{}), answerOf(&TrimExported{}), answerOf(&DebitCredits{}), answerOf(&SetMember{}),
	answerOf(&RemoveMember{}), answerOf(&BlobsDeleted{}), answerOf(&ExpireSpeech{}), answerOf(&ResealWebhook{}),
	answerOf(&SweepIntermediates{}), answerOf(&BenchFill{}), answerOf(&CancelVideo{}),
	answerOf(&CordonNode{}), answerOf(&DrainNode{}), answerOf(&UncordonNode{}), answerOf(&HandBackDrained{}),
	answerOf(&RetryDelivery{}), answerOf(&SendTestEvent{}), answerOf(&RotateWebhookSecret{}),
	answerOf(&DisableWebhook{}), answerOf(&EnableWebhook{}), answerOf(&AbandonDisabled{}), answerOf(&StartEventLog{}), answerOf(&TrimEventLog{}), answerOf(&SetNodeModels{}), answerOf(&SetNodeCapacity{}),
	answerOf(&SortableEventIDs{}),
	answerOf(&SpecsByReference{}),
	answerOf(&ActiveWebhookLimit{}),
	answerOf(&DerivedCreatedEvents{}),
	answerOf(&StartRouting{}),
	answerOf(&GrantCreditsOnce{}),
	answerOf(&CreateAccountOnce{}),
	answerOf(&NextInLine{}),
	answerOf(&FailTaskPermanently{}),
}

type answerType struct {
	typ    MessageType
	answer reflect.Type
}

func answerOf[R any](c Typed[R]) answerType { return answerType{c.Type(), reflect.TypeFor[R]()} }

// Every registered command, applied as a zero payload to a fresh state,
// answers its declared type through the untyped path the log takes, or is
// refused with a nil answer.
func TestRegistryAnswers(t *testing.T) {
	want := map[MessageType]reflect.Type{}
	for _, d := range declared {
		want[d.typ] = d.answer
	}
	answered := 0
	for i, e := range registry {
		if e.new == nil {
			continue
		}
		typ, ok := want[MessageType(i)]
		if !ok {
			t.Errorf("%s: no answerOf line in this test", e.name)
			continue
		}
		out, err := func() (out any, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return New().ApplyCommand(e.new())
		}()
		switch {
		case err != nil && out != nil:
			t.Errorf("%s: refused (%v) with an answer %#v", e.name, err, out)
		case err == nil && reflect.TypeOf(out) != typ:
			t.Errorf("%s: answered %T, declared %v", e.name, out, typ)
		case err == nil:
			answered++
		}
	}
	t.Logf("%d of %d zero payloads answered; the others were refused", answered, len(want))
	if answered == 0 {
		t.Error("no zero payload was answered: the check above checked nothing")
	}
}
