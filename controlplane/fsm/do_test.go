package fsm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

type applierFunc func(context.Context, fsm.Command) (any, error)

func (f applierFunc) Apply(ctx context.Context, c fsm.Command) (any, error) { return f(ctx, c) }

var _ fsm.Applier = applierFunc(nil)

func TestDo(t *testing.T) {
	answer := func(v any, err error) fsm.Applier {
		return applierFunc(func(context.Context, fsm.Command) (any, error) { return v, err })
	}
	ctx := context.Background()

	n, err := fsm.Do(ctx, answer(3, nil), &fsm.ExpireIdempotency{})
	if n != 3 || err != nil {
		t.Fatalf("Do = %d, %v; want 3, nil", n, err)
	}

	// An answer of another type is an error, with the zero answer.
	a, err := fsm.Do(ctx, answer(fsm.Key{ID: "key_1"}, nil), &fsm.GrantCredits{})
	if !errors.Is(err, fsm.ErrUnexpectedAnswer) || a.ID != "" {
		t.Fatalf("Do = %#v, %v; want the zero account and ErrUnexpectedAnswer", a, err)
	}
	if _, err := fsm.Do(ctx, answer(nil, nil), &fsm.RemoveMember{}); !errors.Is(err, fsm.ErrUnexpectedAnswer) {
		t.Fatalf("a nil answer without an error: %v, want ErrUnexpectedAnswer", err)
	}

	// A refusal comes back as it was, with the zero answer.
	v, err := fsm.Do(ctx, answer(nil, fsm.ErrFreeLimitReached), &fsm.CreateVideo{})
	if !errors.Is(err, fsm.ErrFreeLimitReached) || errors.Is(err, fsm.ErrUnexpectedAnswer) || v.Video.ID != "" {
		t.Fatalf("Do = %#v, %v; want the zero result and the refusal", v, err)
	}
}

func TestApplyTyped(t *testing.T) {
	f := fsm.New()
	acct, err := fsm.ApplyTyped(f, &fsm.CreateAccount{AccountID: "acct_1", Name: "A", Plan: fsm.PlanFree, Credits: 5, KeyID: "key_1"})
	if err != nil || acct.ID != "acct_1" || acct.Credits != 5 {
		t.Fatalf("create account = %#v, %v", acct, err)
	}
	acct, err = fsm.ApplyTyped(f, &fsm.GrantCredits{AccountID: "acct_1", Amount: 2})
	if err != nil || acct.Credits != 7 {
		t.Fatalf("grant = %#v, %v; want 7 credits", acct, err)
	}
	if _, err := fsm.ApplyTyped(f, &fsm.GrantCredits{AccountID: "acct_2", Amount: 2}); !errors.Is(err, fsm.ErrAccountNotFound) {
		t.Fatalf("grant to no account: %v, want ErrAccountNotFound", err)
	}
}
