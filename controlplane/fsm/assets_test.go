package fsm_test

import (
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

func pendingAsset(id, account string, size int64) *fsm.CreateAsset {
	return &fsm.CreateAsset{Asset: fsm.Asset{ID: id, AccountID: account, Filename: "x.png", ContentType: "image/png",
		Size: size, BlobKey: "assets/" + id + ".png", CreatedAt: t0}}
}

func TestAssetRules(t *testing.T) {
	for _, ap := range appliers {
		for _, tc := range []struct {
			name  string
			setup func(w *world)
			cmd   fsm.Command
			want  error
			check func(t *testing.T, w *world, v any)
		}{
			{name: "create is pending", cmd: pendingAsset("as_n", "a", 7), check: func(t *testing.T, w *world, v any) {
				if as := v.(fsm.Asset); as.Status != fsm.AssetPending || as.Size != 7 {
					t.Fatalf("created %+v", as)
				}
			}},
			{name: "create for a missing account", cmd: pendingAsset("as_n", "nobody", 7), want: fsm.ErrAccountNotFound},
			{name: "create without a size", cmd: pendingAsset("as_n", "a", 0), want: fsm.ErrInvalidCommand},
			{name: "complete with the declared size and type", setup: func(w *world) { w.must(pendingAsset("as_p", "a", 10)) },
				cmd: &fsm.CompleteAsset{AssetID: "as_p", AccountID: "a", StoredSize: 10, ContentType: "image/png", Now: t0 + 3},
				check: func(t *testing.T, w *world, v any) {
					if as := v.(fsm.Asset); as.Status != fsm.AssetReady || as.CompletedAt != t0+3 {
						t.Fatalf("completed %+v", as)
					}
				}},
			{name: "complete with fewer bytes", setup: func(w *world) { w.must(pendingAsset("as_p", "a", 10)) },
				cmd: &fsm.CompleteAsset{AssetID: "as_p", AccountID: "a", StoredSize: 9, ContentType: "image/png"}, want: fsm.ErrAssetUnusable,
				check: func(t *testing.T, w *world, _ any) {
					if as, _ := w.f.Asset("a", "as_p"); as.Status != fsm.AssetPending {
						t.Fatalf("a refused completion changed the asset: %+v", as)
					}
				}},
			{name: "complete with another type", setup: func(w *world) { w.must(pendingAsset("as_p", "a", 10)) },
				cmd: &fsm.CompleteAsset{AssetID: "as_p", AccountID: "a", StoredSize: 10, ContentType: "image/jpeg"}, want: fsm.ErrAssetUnusable},
			{name: "complete twice answers the ready asset", setup: func(w *world) { w.readyAsset("a", "as_r") },
				cmd: &fsm.CompleteAsset{AssetID: "as_r", AccountID: "a", StoredSize: 1, ContentType: "image/gif", Now: t0 + 99},
				check: func(t *testing.T, w *world, v any) {
					if as := v.(fsm.Asset); as.Status != fsm.AssetReady || as.CompletedAt != t0+1 {
						t.Fatalf("second completion changed the asset: %+v", as)
					}
				}},
			{name: "another account's asset is not found", setup: func(w *world) { w.readyAsset("b", "as_b") },
				cmd: &fsm.DeleteAsset{AssetID: "as_b", AccountID: "a"}, want: fsm.ErrAssetNotFound},
			{name: "delete", setup: func(w *world) { w.readyAsset("a", "as_r") },
				cmd: &fsm.DeleteAsset{AssetID: "as_r", AccountID: "a"},
				check: func(t *testing.T, w *world, _ any) {
					if _, ok := w.f.Asset("a", "as_r"); ok || len(w.f.Assets("a")) != 0 {
						t.Fatal("the deleted asset is still listed")
					}
				}},
			{name: "expiry keeps an asset completed since", setup: func(w *world) { w.readyAsset("a", "as_r") },
				cmd: &fsm.DeleteAsset{AssetID: "as_r", AccountID: "a", OnlyPending: true}, want: fsm.ErrAssetUnusable},
			{name: "expiry deletes a pending asset", setup: func(w *world) { w.must(pendingAsset("as_p", "a", 10)) },
				cmd: &fsm.DeleteAsset{AssetID: "as_p", AccountID: "a", OnlyPending: true},
				check: func(t *testing.T, w *world, _ any) {
					if len(w.f.PendingAssets(t0+1)) != 0 {
						t.Fatal("the expired asset is still pending")
					}
				}},
			{name: "delete a kit's logo", setup: func(w *world) {
				w.readyAsset("a", "as_r")
				w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_1", AccountID: "a", Name: "k", LogoAssetID: "as_r"}})
			}, cmd: &fsm.DeleteAsset{AssetID: "as_r", AccountID: "a"}, want: fsm.ErrInUse},
			{name: "delete an asset a queued video uses", setup: func(w *world) {
				w.readyAsset("a", "as_r")
				c := createVideo("v1", "a", 3, "", "", t0)
				c.Spec.FileAssetIDs = []string{"as_r"}
				w.must(c)
			}, cmd: &fsm.DeleteAsset{AssetID: "as_r", AccountID: "a"}, want: fsm.ErrInUse},
			{name: "video with a pending asset", setup: func(w *world) { w.must(pendingAsset("as_p", "a", 10)) },
				cmd: func() fsm.Command {
					c := createVideo("v1", "a", 3, "", "", t0)
					c.Spec.FileAssetIDs = []string{"as_p"}
					return c
				}(), want: fsm.ErrAssetUnusable,
				check: func(t *testing.T, w *world, _ any) {
					if w.balance("a") != 100 {
						t.Fatal("a refused video was charged")
					}
				}},
			{name: "video with another account's asset", setup: func(w *world) { w.readyAsset("b", "as_b") },
				cmd: func() fsm.Command {
					c := createVideo("v1", "a", 3, "", "", t0)
					c.Spec.FileAssetIDs = []string{"as_b"}
					return c
				}(), want: fsm.ErrAssetUnusable},
			{name: "video with another account's kit", setup: func(w *world) {
				w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_b", AccountID: "b", Name: "k"}})
			}, cmd: func() fsm.Command {
				c := createVideo("v1", "a", 3, "", "", t0)
				c.Spec.BrandKitID = "br_b"
				return c
			}(), want: fsm.ErrBrandKitNotFound},
			{name: "kit with a pending logo", setup: func(w *world) { w.must(pendingAsset("as_p", "a", 10)) },
				cmd: &fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_1", AccountID: "a", Name: "k", LogoAssetID: "as_p"}}, want: fsm.ErrAssetUnusable},
			{name: "delete a kit a queued video uses", setup: func(w *world) {
				w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_1", AccountID: "a", Name: "k"}})
				c := createVideo("v1", "a", 3, "", "", t0)
				c.Spec.BrandKitID = "br_1"
				w.must(c)
			}, cmd: &fsm.DeleteBrandKit{KitID: "br_1", AccountID: "a"}, want: fsm.ErrInUse},
			{name: "delete a kit once its video failed", setup: func(w *world) {
				w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_1", AccountID: "a", Name: "k"}})
				c := createVideo("v1", "a", 3, "", "", t0)
				c.Spec.BrandKitID = "br_1"
				w.must(c)
				w.must(&fsm.FailVideo{VideoID: "v1", Reason: "r", Now: t0})
			}, cmd: &fsm.DeleteBrandKit{KitID: "br_1", AccountID: "a"},
				check: func(t *testing.T, w *world, _ any) {
					if len(w.f.BrandKits("a")) != 0 {
						t.Fatal("the deleted kit is still listed")
					}
				}},
			{name: "delete another account's kit", setup: func(w *world) {
				w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_b", AccountID: "b", Name: "k"}})
			}, cmd: &fsm.DeleteBrandKit{KitID: "br_b", AccountID: "a"}, want: fsm.ErrBrandKitNotFound},
		} {
			t.Run(ap.name+"/"+tc.name, func(t *testing.T) {
				w := newWorld(t, ap)
				w.account("a", fsm.PlanPro, 100)
				w.account("b", fsm.PlanPro, 100)
				if tc.setup != nil {
					tc.setup(w)
				}
				v, err := w.apply(tc.cmd)
				wantErr(t, err, tc.want)
				if tc.check != nil {
					tc.check(t, w, v)
				}
			})
		}
	}
}

func TestAssetAndKitLimits(t *testing.T) {
	w := newWorld(t, appliers[0])
	w.account("a", fsm.PlanPro, 100)
	for i := range fsm.MaxBrandKitsPerAccount {
		w.must(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_" + string(rune('A'+i%26)) + string(rune('a'+i/26)), AccountID: "a", Name: "k"}})
	}
	_, err := w.apply(&fsm.CreateBrandKit{Kit: fsm.BrandKit{ID: "br_over", AccountID: "a", Name: "k"}})
	wantErr(t, err, fsm.ErrLimitReached)
	kits := w.f.BrandKits("a")
	if len(kits) != fsm.MaxBrandKitsPerAccount || kits[0].ID != "br_Vd" {
		t.Fatalf("%d kits, newest %s", len(kits), kits[0].ID)
	}
}
