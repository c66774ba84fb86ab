package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/blob/s3test"
)

// storeContract checks what every Store promises: round trips, ranged reads,
// overwrites, not-found, idempotent deletes, key rules, and that a failed or
// cancelled Put leaves the previous blob.
func storeContract(t *testing.T, s blob.Store) {
	t.Helper()
	ctx := context.Background()
	key := "videos/vid_1/render/clip.mp4"
	if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat before Put = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Open(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open before Put = %v, want ErrNotFound", err)
	}
	if n, err := s.Put(ctx, key, strings.NewReader("hello world")); err != nil || n != 11 {
		t.Fatalf("Put = %d, %v", n, err)
	}
	if info, err := s.Stat(ctx, key); err != nil || info.Size != 11 || info.Key != key || info.ModTime.IsZero() {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	rc, info, err := s.Open(ctx, key)
	if err != nil || info.Size != 11 {
		t.Fatalf("Open = %+v, %v", info, err)
	}
	if _, err := rc.Seek(6, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "world" {
		t.Fatalf("read after seek = %q", b)
	}

	// Larger than one multipart part of the S3 store, byte for byte.
	big := make([]byte, 17<<20+123)
	_, _ = rand.Read(big)
	if n, err := s.Put(ctx, "big/blob.bin", bytes.NewReader(big)); err != nil || n != int64(len(big)) {
		t.Fatalf("Put of %d bytes = %d, %v", len(big), n, err)
	}
	rc, _, err = s.Open(ctx, "big/blob.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Seek(int64(len(big))-1000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tail, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(tail, big[len(big)-1000:]) {
		t.Fatal("the tail of a large blob read after a seek differs from what was put")
	}

	// Failed and cancelled puts leave the previous blob.
	if _, err := s.Put(ctx, key, &failingReader{n: 3}); err == nil {
		t.Fatal("Put with a failing reader succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cctx, key, strings.NewReader("cancelled")); err == nil {
		t.Fatal("Put with a cancelled context succeeded")
	}
	rc, _, err = s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello world" {
		t.Fatalf("blob after failed puts = %q, want the previous one", b)
	}

	if _, err := s.Put(ctx, key, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Stat(ctx, key); info.Size != 3 {
		t.Fatalf("size after overwrite = %d, want 3", info.Size)
	}
	for range 2 {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("Delete = %v, want nil (also when already gone)", err)
		}
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat after Delete = %v, want ErrNotFound", err)
	}
	listContract(t, s)
	for _, k := range []string{"../escape", "/etc/passwd", ".tmp/put-1", "a//b"} {
		if _, err := s.Put(ctx, k, strings.NewReader("x")); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

// listContract checks List: prefixes, sizes, times, stopping early.
func listContract(t *testing.T, s blob.Store) {
	t.Helper()
	ctx := context.Background()
	put := map[string]string{"list/a/1.json": "1", "list/a/2.json": "22", "list/b.json": "333", "lister/x.json": "4444"}
	for k, v := range put {
		if _, err := s.Put(ctx, k, strings.NewReader(v)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string) map[string]int64 {
		t.Helper()
		got := map[string]int64{}
		for info, err := range s.List(ctx, prefix) {
			if err != nil {
				t.Fatalf("List(%q): %v", prefix, err)
			}
			if _, dup := got[info.Key]; dup || info.ModTime.IsZero() {
				t.Fatalf("List(%q) yielded %+v twice or without a time", prefix, info)
			}
			got[info.Key] = info.Size
		}
		return got
	}
	for prefix, want := range map[string]map[string]int64{
		"list/":    {"list/a/1.json": 1, "list/a/2.json": 2, "list/b.json": 3},
		"list/a":   {"list/a/1.json": 1, "list/a/2.json": 2},
		"list/a/":  {"list/a/1.json": 1, "list/a/2.json": 2},
		"list":     {"list/a/1.json": 1, "list/a/2.json": 2, "list/b.json": 3, "lister/x.json": 4},
		"nothing/": {},
	} {
		if got := list(prefix); !maps.Equal(got, want) {
			t.Errorf("List(%q) = %v, want %v", prefix, got, want)
		}
	}
	all := list("")
	for k := range put {
		if _, ok := all[k]; !ok {
			t.Errorf("List(\"\") misses %s", k)
		}
	}
	for k := range all {
		if strings.HasPrefix(k, ".") {
			t.Errorf("List(\"\") yields %s, which is not a blob", k)
		}
	}
	n := 0
	for range s.List(ctx, "list/") {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("stopping after one blob saw %d", n)
	}
	for k := range put {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if got := list("list"); len(got) != 0 {
		t.Fatalf("List after Delete = %v", got)
	}
}

func TestLocalStoreContract(t *testing.T) {
	s, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
}

// TestS3StoreContract runs the same contract against a real S3-compatible
// server (gofakes3, a separate process), with a key prefix, and checks that two
// stores on the same bucket (two control-plane nodes) see each other's blobs.
func TestS3StoreContract(t *testing.T) {
	cfg := s3test.Start(t, "vidfarm-test")
	cfg.Prefix = "farm-a"
	ctx := context.Background()
	s, err := blob.NewS3Store(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)

	other, err := blob.NewS3Store(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "shared/poster.jpg", strings.NewReader("jpeg")); err != nil {
		t.Fatal(err)
	}
	if info, err := other.Stat(ctx, "shared/poster.jpg"); err != nil || info.Size != 4 {
		t.Fatalf("a second node's store: %+v, %v", info, err)
	}
	// Another prefix is another farm: it does not see farm-a's blobs.
	cfg.Prefix = "farm-b"
	b, err := blob.NewS3Store(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "shared/poster.jpg"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("farm-b sees farm-a's blob: %v", err)
	}

	missing := cfg
	missing.Bucket = "no-such-bucket"
	if _, err := blob.NewS3Store(ctx, missing); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a missing bucket: %v, want a clear refusal", err)
	}
}
