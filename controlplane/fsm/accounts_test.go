package fsm_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// accountCase is one command applied to a world holding "pro" (pro, 100 credits)
// and "free" (free, 0 credits).
type accountCase struct {
	name  string
	setup func(w *world)
	cmd   fsm.Command
	err   error
	check func(t *testing.T, w *world, v any)
}

func runAccountCases(t *testing.T, cases []accountCase) {
	t.Helper()
	for _, a := range appliers {
		for _, tc := range cases {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, a)
				w.account("pro", fsm.PlanPro, 100)
				w.account("free", fsm.PlanFree, 0)
				if tc.setup != nil {
					tc.setup(w)
				}
				v, err := w.apply(tc.cmd)
				wantErr(t, err, tc.err)
				if tc.check != nil {
					tc.check(t, w, v)
				}
			})
		}
	}
}

func TestCreateAccount(t *testing.T) {
	runAccountCases(t, []accountCase{
		{
			name: "opens the account with its first key",
			cmd: &fsm.CreateAccount{AccountID: "new", Name: "New", Plan: fsm.PlanMax, Credits: 42,
				KeyID: "new-key", KeyHash: keyHash("new-secret"), KeyHint: "vf_live_abcd", Now: t0 + 5},
			check: func(t *testing.T, w *world, v any) {
				want := fsm.Account{ID: "new", Name: "New", Plan: fsm.PlanMax, Credits: 42, CreatedAt: t0 + 5}
				if got := v.(fsm.Account); got != want {
					t.Fatalf("answer %+v, want %+v", got, want)
				}
				if got, _ := w.f.Account("new"); got != want {
					t.Fatalf("stored %+v, want %+v", got, want)
				}
				k, ok := w.f.KeyByHash(keyHash("new-secret"))
				if !ok || k.ID != "new-key" || k.AccountID != "new" || k.Hint != "vf_live_abcd" || k.CreatedAt != t0+5 || k.RevokedAt != 0 {
					t.Fatalf("first key %+v (found %v)", k, ok)
				}
			},
		},
		{
			name: "free plan with zero credits",
			cmd:  &fsm.CreateAccount{AccountID: "f2", Plan: fsm.PlanFree, KeyID: "f2-key", KeyHash: keyHash("f2"), Now: t0},
			check: func(t *testing.T, w *world, v any) {
				if a := v.(fsm.Account); a.Plan != fsm.PlanFree || a.Credits != 0 || a.FreeVideoUsed {
					t.Fatalf("account %+v", a)
				}
			},
		},
		{
			name: "unknown plan",
			cmd:  &fsm.CreateAccount{AccountID: "x", Plan: "gold", KeyID: "x-key", KeyHash: keyHash("x"), Now: t0},
			err:  fsm.ErrInvalidCommand,
			check: func(t *testing.T, w *world, _ any) {
				noAccount(t, w, "x", keyHash("x"))
			},
		},
		{
			name: "negative opening balance",
			cmd:  &fsm.CreateAccount{AccountID: "x", Plan: fsm.PlanPro, Credits: -1, KeyID: "x-key", KeyHash: keyHash("x"), Now: t0},
			err:  fsm.ErrInvalidCommand,
			check: func(t *testing.T, w *world, _ any) {
				noAccount(t, w, "x", keyHash("x"))
			},
		},
		{
			name: "existing account id",
			cmd:  &fsm.CreateAccount{AccountID: "pro", Plan: fsm.PlanFree, KeyID: "x-key", KeyHash: keyHash("x"), Now: t0},
			err:  fsm.ErrInvalidCommand,
			check: func(t *testing.T, w *world, _ any) {
				if a, _ := w.f.Account("pro"); a.Plan != fsm.PlanPro || a.Credits != 100 {
					t.Fatalf("existing account changed: %+v", a)
				}
				if _, ok := w.f.KeyByHash(keyHash("x")); ok {
					t.Fatal("refused command added its key")
				}
			},
		},
	})
}

func noAccount(t *testing.T, w *world, id string, h [32]byte) {
	t.Helper()
	if _, ok := w.f.Account(id); ok {
		t.Fatalf("refused command created account %s", id)
	}
	if _, ok := w.f.KeyByHash(h); ok {
		t.Fatalf("refused command added a key")
	}
}

func TestCreateKey(t *testing.T) {
	runAccountCases(t, []accountCase{
		{
			name: "adds a key to the account",
			cmd:  &fsm.CreateKey{AccountID: "pro", KeyID: "pro-key1", KeyHash: keyHash("k1"), KeyHint: "vf_live_k1", Now: t0 + 9},
			check: func(t *testing.T, w *world, v any) {
				want := fsm.Key{ID: "pro-key1", AccountID: "pro", Hash: keyHash("k1"), Hint: "vf_live_k1", CreatedAt: t0 + 9}
				if got := v.(fsm.Key); got != want {
					t.Fatalf("answer %+v, want %+v", got, want)
				}
				if got, ok := w.f.KeyByHash(keyHash("k1")); !ok || got != want {
					t.Fatalf("by hash %+v, want %+v", got, want)
				}
				if got, ok := w.f.Key("pro-key1"); !ok || got != want {
					t.Fatalf("by id %+v, want %+v", got, want)
				}
				if _, ok := w.f.KeyByHash(keyHash("secret-pro")); !ok {
					t.Fatal("first key lost")
				}
			},
		},
		{
			name: "unknown account",
			cmd:  &fsm.CreateKey{AccountID: "nobody", KeyID: "k", KeyHash: keyHash("k"), Now: t0},
			err:  fsm.ErrAccountNotFound,
			check: func(t *testing.T, w *world, _ any) {
				if _, ok := w.f.Key("k"); ok {
					t.Fatal("key stored for an unknown account")
				}
			},
		},
		{
			name: "hash of an existing key",
			cmd:  &fsm.CreateKey{AccountID: "free", KeyID: "k", KeyHash: keyHash("secret-pro"), Now: t0},
			err:  fsm.ErrInvalidCommand,
			check: func(t *testing.T, w *world, _ any) {
				if k, _ := w.f.KeyByHash(keyHash("secret-pro")); k.AccountID != "pro" {
					t.Fatalf("colliding key took over the hash: %+v", k)
				}
			},
		},
	})
}

func TestRevokeKey(t *testing.T) {
	runAccountCases(t, []accountCase{
		{
			name: "stamps the revocation time",
			cmd:  &fsm.RevokeKey{KeyID: "pro-key0", Now: t0 + 7},
			check: func(t *testing.T, w *world, v any) {
				if k := v.(fsm.Key); k.RevokedAt != t0+7 {
					t.Fatalf("answer %+v", k)
				}
				k, ok := w.f.KeyByHash(keyHash("secret-pro"))
				if !ok || k.RevokedAt != t0+7 {
					t.Fatalf("a revoked key must still resolve (to answer api_key_revoked) and carry its time: %+v %v", k, ok)
				}
			},
		},
		{
			name:  "revoking twice keeps the first time",
			setup: func(w *world) { w.must(&fsm.RevokeKey{KeyID: "pro-key0", Now: t0 + 1}) },
			cmd:   &fsm.RevokeKey{KeyID: "pro-key0", Now: t0 + 2},
			check: func(t *testing.T, w *world, v any) {
				if k, _ := w.f.Key("pro-key0"); k.RevokedAt != t0+1 {
					t.Fatalf("revoked at %d, want %d", k.RevokedAt, t0+1)
				}
			},
		},
		{
			name: "other keys of the account stay valid",
			setup: func(w *world) {
				w.must(&fsm.CreateKey{AccountID: "pro", KeyID: "pro-key1", KeyHash: keyHash("k1"), Now: t0})
			},
			cmd: &fsm.RevokeKey{KeyID: "pro-key0", Now: t0 + 2},
			check: func(t *testing.T, w *world, v any) {
				if k, _ := w.f.Key("pro-key1"); k.RevokedAt != 0 {
					t.Fatalf("sibling key revoked: %+v", k)
				}
			},
		},
		{name: "unknown key", cmd: &fsm.RevokeKey{KeyID: "nope", Now: t0}, err: fsm.ErrKeyNotFound},
	})
}

func TestGrantCredits(t *testing.T) {
	balance := func(id string, want int64) func(t *testing.T, w *world, v any) {
		return func(t *testing.T, w *world, v any) {
			if got := w.balance(id); got != want {
				t.Fatalf("balance of %s = %d, want %d", id, got, want)
			}
		}
	}
	runAccountCases(t, []accountCase{
		{name: "adds to the balance", cmd: &fsm.GrantCredits{AccountID: "pro", Amount: 25, Now: t0}, check: func(t *testing.T, w *world, v any) {
			if a := v.(fsm.Account); a.Credits != 125 {
				t.Fatalf("answer %+v", a)
			}
			balance("pro", 125)(t, w, v)
		}},
		{name: "free accounts may hold credits", cmd: &fsm.GrantCredits{AccountID: "free", Amount: 1, Now: t0}, check: balance("free", 1)},
		{name: "zero", cmd: &fsm.GrantCredits{AccountID: "pro", Amount: 0, Now: t0}, err: fsm.ErrInvalidCommand, check: balance("pro", 100)},
		{name: "negative", cmd: &fsm.GrantCredits{AccountID: "pro", Amount: -50, Now: t0}, err: fsm.ErrInvalidCommand, check: balance("pro", 100)},
		{name: "unknown account", cmd: &fsm.GrantCredits{AccountID: "nobody", Amount: 5, Now: t0}, err: fsm.ErrAccountNotFound},
	})
}

func TestSetPlan(t *testing.T) {
	plan := func(id, want string) func(t *testing.T, w *world, v any) {
		return func(t *testing.T, w *world, v any) {
			if a, _ := w.f.Account(id); a.Plan != want {
				t.Fatalf("plan of %s = %q, want %q", id, a.Plan, want)
			}
		}
	}
	runAccountCases(t, []accountCase{
		{name: "upgrade", cmd: &fsm.SetPlan{AccountID: "free", Plan: fsm.PlanPro, Now: t0}, check: plan("free", fsm.PlanPro)},
		{name: "downgrade keeps the balance", cmd: &fsm.SetPlan{AccountID: "pro", Plan: fsm.PlanFree, Now: t0}, check: func(t *testing.T, w *world, v any) {
			plan("pro", fsm.PlanFree)(t, w, v)
			if w.balance("pro") != 100 {
				t.Fatalf("balance changed to %d", w.balance("pro"))
			}
		}},
		{name: "unknown plan", cmd: &fsm.SetPlan{AccountID: "pro", Plan: "enterprise", Now: t0}, err: fsm.ErrInvalidCommand, check: plan("pro", fsm.PlanPro)},
		{name: "empty plan", cmd: &fsm.SetPlan{AccountID: "pro", Now: t0}, err: fsm.ErrInvalidCommand, check: plan("pro", fsm.PlanPro)},
		{name: "unknown account", cmd: &fsm.SetPlan{AccountID: "nobody", Plan: fsm.PlanMax, Now: t0}, err: fsm.ErrAccountNotFound},
	})
}

func TestCreateFolder(t *testing.T) {
	runAccountCases(t, []accountCase{
		{
			name:  "listed in creation order, invisible to other accounts",
			setup: func(w *world) { w.must(&fsm.CreateFolder{FolderID: "fld_b", AccountID: "pro", Name: "first", Now: t0}) },
			cmd:   &fsm.CreateFolder{FolderID: "fld_a", AccountID: "pro", Name: "second", Now: t0 + 1},
			check: func(t *testing.T, w *world, v any) {
				want := fsm.Folder{ID: "fld_a", AccountID: "pro", Name: "second", CreatedAt: t0 + 1}
				if got := v.(fsm.Folder); got != want {
					t.Fatalf("answer %+v, want %+v", got, want)
				}
				fs := w.f.Folders("pro")
				if len(fs) != 2 || fs[0].ID != "fld_b" || fs[1].ID != "fld_a" {
					t.Fatalf("folders %+v", fs)
				}
				if _, ok := w.f.Folder("free", "fld_a"); ok {
					t.Fatal("another account sees the folder")
				}
				if got, ok := w.f.Folder("pro", "fld_a"); !ok || got != want {
					t.Fatalf("folder %+v %v", got, ok)
				}
				if fs := w.f.Folders("free"); len(fs) != 0 {
					t.Fatalf("free has folders %+v", fs)
				}
			},
		},
		{name: "unknown account", cmd: &fsm.CreateFolder{FolderID: "fld", AccountID: "nobody", Name: "x", Now: t0}, err: fsm.ErrAccountNotFound},
	})
}
