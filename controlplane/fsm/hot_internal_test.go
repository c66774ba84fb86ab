package fsm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// The arena must write what msgpack.Marshal writes (files written before it
// and by other members are read the same way), and a record's bytes must
// stay as they were while later records fill and overflow the chunks.
func TestEncodeArenaMatchesMarshal(t *testing.T) {
	var a encodeArena
	var got, want [][]byte
	for i := range 3000 {
		v := &Video{ID: fmt.Sprintf("vid_%d", i), AccountID: "acct_1", Status: "queued", CreditsCharged: int64(i)}
		if i%500 == 7 { // larger than what is left of a chunk
			v.ErrorMessage = strings.Repeat("x", arenaChunk/8)
		}
		b, err := a.encode(v)
		if err != nil {
			t.Fatal(err)
		}
		m, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, want = append(got, b), append(want, m)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: arena wrote %d bytes unlike Marshal's %d", i, len(got[i]), len(want[i]))
		}
	}
}
