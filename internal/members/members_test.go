package members_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/vidfarm/vidfarm/internal/members"
)

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func leader(name string) http.Header {
	h := http.Header{}
	if name != "" {
		h.Set(members.HeaderLeader, name)
	}
	return h
}

func removed(node string) http.Header {
	h := http.Header{}
	h.Set(members.HeaderRemoved, node)
	return h
}

// TestCursor drives a cursor over three members through the moves a client
// makes, each step from where the one before left it.
func TestCursor(t *testing.T) {
	a, b, c := mustURL(t, "http://a:1"), mustURL(t, "http://b:1"), mustURL(t, "http://c:1")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	steps := []struct {
		name string
		move func(cur *members.Cursor)
		want *url.URL
	}{
		{"starts at the base URL", func(*members.Cursor) {}, a},
		{"no answer at the base URL: the next member", func(cur *members.Cursor) { cur.Failover(bg, a) }, b},
		{"a late failure at the base URL moves nothing", func(cur *members.Cursor) { cur.Failover(bg, a) }, b},
		{"a follower names a member, with a trailing slash", func(cur *members.Cursor) { cur.Follow(leader("http://c:1/")) }, c},
		{"a name it does not know", func(cur *members.Cursor) { cur.Follow(leader("http://evil:1")) }, c},
		{"no name", func(cur *members.Cursor) { cur.Follow(leader("")) }, c},
		{"a name that is no URL", func(cur *members.Cursor) { cur.Follow(leader("http://%zz")) }, c},
		{"a request the caller canceled", func(cur *members.Cursor) { cur.Failover(canceled, c) }, c},
		{"no answer at the last member: back to the first", func(cur *members.Cursor) { cur.Failover(bg, c) }, a},
		{"followed again", func(cur *members.Cursor) { cur.Follow(leader("http://b:1")) }, b},
		{"home", func(cur *members.Cursor) { cur.Home() }, a},
		{"an answer that names the leader", func(cur *members.Cursor) { cur.Answered(bg, a, leader("http://c:1")) }, c},
		{"an answer from a removed member: the next one", func(cur *members.Cursor) { cur.Answered(bg, c, removed("n3")) }, a},
		{"a late answer from the removed member moves nothing", func(cur *members.Cursor) { cur.Answered(bg, c, removed("n3")) }, a},
		{"an answer with neither header", func(cur *members.Cursor) { cur.Answered(bg, a, http.Header{}) }, a},
	}
	cur := members.NewSet(a, b, c, mustURL(t, "http://b:1/"), a).Cursor()
	for _, st := range steps {
		st.move(cur)
		if got := cur.At(); got != st.want {
			t.Fatalf("%s: at %s, want %s", st.name, got, st.want)
		}
	}
}

// TestCursorsMoveApart: two cursors of one set move on their own.
func TestCursorsMoveApart(t *testing.T) {
	a, b := mustURL(t, "http://a:1"), mustURL(t, "http://b:1")
	set := members.NewSet(a, b)
	calls, streams := set.Cursor(), set.Cursor()
	calls.Follow(leader("http://b:1"))
	if calls.At() != b || streams.At() != a {
		t.Fatalf("calls at %s, streams at %s: want b and a", calls.At(), streams.At())
	}
}

// TestOneMember: a set of the base URL alone never moves.
func TestOneMember(t *testing.T) {
	a := mustURL(t, "http://a:1")
	cur := members.NewSet(a).Cursor()
	cur.Failover(context.Background(), a)
	cur.Follow(leader("http://a:1"))
	if cur.At() != a {
		t.Fatalf("at %s, want a", cur.At())
	}
}
