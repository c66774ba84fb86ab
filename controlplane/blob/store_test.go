package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/blob"
)

func TestValidateKey(t *testing.T) {
	good := []string{"a", "videos/vid_x/render/clip.mp4", "A-b_c.d/e", "x/y.tar.gz"}
	for _, k := range good {
		if err := blob.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{
		"", "/abs", "a/../b", "..", ".", "a/./b", "a//b", "a/", "a/.hidden", ".tmp/x",
		"a b", "a\\b", "a/b?c", "ä", "a\x00b", strings.Repeat("a", blob.MaxKeyLen+1),
	}
	for _, k := range bad {
		if err := blob.ValidateKey(k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestLocalStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := "videos/vid_1/render/clip.mp4"
	if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat before Put = %v, want ErrNotFound", err)
	}
	n, err := s.Put(ctx, key, strings.NewReader("hello world"))
	if err != nil || n != 11 {
		t.Fatalf("Put = %d, %v", n, err)
	}
	info, err := s.Stat(ctx, key)
	if err != nil || info.Size != 11 || info.Key != key || info.ModTime.IsZero() {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	rc, info, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Seek(6, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "world" || info.Size != 11 {
		t.Fatalf("read after seek = %q (size %d)", b, info.Size)
	}
	if _, err := s.Put(ctx, key, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if info, _ := s.Stat(ctx, key); info.Size != 3 {
		t.Fatalf("size after overwrite = %d, want 3", info.Size)
	}
	// A directory that holds keys is not itself a blob.
	if _, err := s.Stat(ctx, "videos/vid_1"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat of a directory = %v, want ErrNotFound", err)
	}
	// A path through a file is not found, not an I/O error.
	if _, _, err := s.Open(ctx, key+"/x"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open through a file = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("second Delete = %v, want nil", err)
	}
	if _, _, err := s.Open(ctx, key); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open after Delete = %v, want ErrNotFound", err)
	}
	for _, k := range []string{"../escape", "/etc/passwd", ".tmp/put-1"} {
		if _, err := s.Put(ctx, k, strings.NewReader("x")); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
		t.Fatal("a key escaped the store's directory")
	}
}

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("connection reset")
	}
	f.n--
	return copy(p, bytes.Repeat([]byte("x"), len(p))), nil
}

// A failed or cancelled upload leaves the previous blob and no temporary file.
func TestLocalStorePutIsAtomic(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := "videos/vid_1/finalize/video.mp4"
	if _, err := s.Put(ctx, key, strings.NewReader("complete")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, key, &failingReader{n: 3}); err == nil {
		t.Fatal("Put with a failing reader succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cctx, key, strings.NewReader("cancelled")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %v", err)
	}
	rc, _, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "complete" {
		t.Fatalf("blob after failed puts = %q, want the previous one", b)
	}
	left, _ := os.ReadDir(filepath.Join(dir, ".tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

// Old temporary files of uploads a crash interrupted are cleared on open; recent
// ones may belong to another process and stay.
func TestLocalStoreClearsStaleTempOnOpen(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"put-old", "put-new"} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(tmp, "put-old"), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := blob.NewLocalStore(dir); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 1 || left[0].Name() != "put-new" {
		t.Fatalf("temporary files after open = %v, want only put-new", left)
	}
}

// TestLocalStoreDeleteLeavesNoEmptyDirectories: deleting a directory's last
// key removes the directory and its parents that are left empty, never the
// store's root or its temporary directory, and never a directory that still
// holds a key.
func TestLocalStoreDeleteLeavesNoEmptyDirectories(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"videos/v1/render/out.mp4", "videos/v1/render/log.txt", "videos/v1/poster.jpg", "videos/v2/a.mp4"} {
		if _, err := s.Put(ctx, k, strings.NewReader(k)); err != nil {
			t.Fatal(err)
		}
	}
	isDir := func(rel string) bool {
		st, err := os.Stat(filepath.Join(dir, rel))
		return err == nil && st.IsDir()
	}
	for _, st := range []struct {
		del        string
		kept, gone []string
	}{
		{"videos/v1/render/out.mp4", []string{"videos/v1/render"}, nil},
		{"videos/v1/render/log.txt", []string{"videos/v1"}, []string{"videos/v1/render"}},
		{"videos/v1/poster.jpg", []string{"videos", "videos/v2"}, []string{"videos/v1"}},
		{"videos/v2/a.mp4", []string{"."}, []string{"videos"}},
	} {
		if err := s.Delete(ctx, st.del); err != nil {
			t.Fatal(err)
		}
		for _, d := range st.kept {
			if !isDir(d) {
				t.Errorf("after deleting %s: %s is gone", st.del, d)
			}
		}
		for _, d := range st.gone {
			if isDir(d) {
				t.Errorf("after deleting %s: the empty directory %s is left", st.del, d)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("store root holds %v (%v), want its temporary directory alone", entries, err)
	}
}

// TestLocalStorePutBesideDeletes: puts into a directory whose other keys are
// deleted at the same time all land, though each delete may remove the
// directory the put is about to rename into.
func TestLocalStorePutBesideDeletes(t *testing.T) {
	ctx := context.Background()
	s, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := s.Put(ctx, fmt.Sprintf("videos/v/kept-%d", i), strings.NewReader("x")); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			k := fmt.Sprintf("videos/v/gone-%d", i)
			if _, err := s.Put(ctx, k, strings.NewReader("x")); err != nil {
				errs <- err
				return
			}
			if err := s.Delete(ctx, k); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range n {
		if _, err := s.Stat(ctx, fmt.Sprintf("videos/v/kept-%d", i)); err != nil {
			t.Errorf("kept-%d: %v", i, err)
		}
	}
}
