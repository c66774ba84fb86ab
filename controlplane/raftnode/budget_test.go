package raftnode

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The handlers pass the request's context as it is, so a context without a
// deadline must still bound the wait, and one that is done must propose
// nothing (raft reads a timeout of zero or less as "wait forever").
func TestWaitBudget(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	soon, cancelSoon := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSoon()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		min, max time.Duration
		err      error
	}{
		{"no deadline", context.Background(), DefaultApplyTimeout, DefaultApplyTimeout, nil},
		{"its own deadline", soon, 50 * time.Second, time.Minute, nil},
		{"canceled", canceled, 0, 0, context.Canceled},
		{"deadline passed", past, 0, 0, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := waitBudget(tc.ctx)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if got < tc.min || got > tc.max {
				t.Fatalf("budget %v, want within [%v, %v]", got, tc.min, tc.max)
			}
		})
	}
}
