package server

import (
	"strings"
	"testing"
)

// Every kept key's second part is in raftSeriesGroups, or series would
// drop it before looking it up.
func TestRaftSeriesGroups(t *testing.T) {
	for key, sr := range raftSeries {
		if name, ok := (raftSink{}).series(strings.Split(key, ".")); !ok || name != sr.name {
			t.Errorf("%s: series gives %q, %v; want %q", key, name, ok, sr.name)
		}
	}
	if _, ok := (raftSink{}).series([]string{"raft", "apply"}); ok {
		t.Error("raft.apply is kept")
	}
}
