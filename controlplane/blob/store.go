package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var (
	// ErrNotFound means no blob is stored under the key.
	ErrNotFound = errors.New("blob not found")
	// ErrInvalidKey means a key breaks the key rules (see ValidateKey).
	ErrInvalidKey = errors.New("invalid blob key")
)

// MaxKeyLen is the longest key a store accepts.
const MaxKeyLen = 512

// Info describes a stored blob.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store keeps blobs by key: rendered videos, captions, posters and the
// intermediate artifacts tasks hand to each other. LocalStore keeps them in a
// directory; an object-storage store (S3 and the like) implements the same four
// calls, its Open answering Seek by remembering the offset and reading with a
// ranged GET, so range requests work against either.
//
// Keys are slash-separated paths; see ValidateKey.
type Store interface {
	// Put stores everything r yields under key, replacing any blob there. Readers
	// see the old blob or the new one, never a part: a Put that fails (r errors,
	// ctx ends) leaves what was there. It returns the number of bytes stored.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open returns the blob for reading and what it is. The caller closes it.
	Open(ctx context.Context, key string) (io.ReadSeekCloser, Info, error)
	// Stat says whether key exists (ErrNotFound if not) and what it is.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes key. Deleting a key that does not exist is not an error.
	Delete(ctx context.Context, key string) error
	// List yields each blob whose key starts with prefix ("" for all) once,
	// in no promised order, and stops after the first error it yields.
	// Blobs put or deleted while it runs may or may not be seen.
	List(ctx context.Context, prefix string) iter.Seq2[Info, error]
}

// ValidateKey checks a key: 1 to MaxKeyLen characters of [a-zA-Z0-9._/-],
// slash-separated segments that are neither empty nor start with a dot (so no
// ".", "..", hidden files or absolute paths).
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: length must be 1..%d, got %d", ErrInvalidKey, MaxKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-'
		if !ok {
			return fmt.Errorf("%w: %q has %q at %d; use only letters, digits and . _ / -", ErrInvalidKey, key, c, i)
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" {
			return fmt.Errorf("%w: %q has an empty path segment (leading, trailing or double slash)", ErrInvalidKey, key)
		}
		if seg[0] == '.' {
			return fmt.Errorf("%w: %q has a segment starting with a dot", ErrInvalidKey, key)
		}
	}
	return nil
}

// LocalStore keeps blobs as files under a directory: key "a/b/c.mp4" is the file
// <dir>/a/b/c.mp4. Writes go to a temporary file in <dir>/.tmp, are synced and
// renamed into place, so a crash never leaves a partial blob under a key.
type LocalStore struct {
	dir string
	tmp string
}

var _ Store = (*LocalStore)(nil)

// tmpDir holds uploads in flight; keys cannot reach it (no segment starts with a dot).
const tmpDir = ".tmp"

// staleTemp is the age after which a temporary file is taken for the leftover of
// a crashed upload. Younger ones may be uploads in flight of another process
// sharing the directory.
const staleTemp = time.Hour

// NewLocalStore opens (creating if needed) a store in dir. Temporary files a crash
// left behind (older than an hour) are removed.
func NewLocalStore(dir string) (*LocalStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blob dir %s: %w", dir, err)
	}
	s := &LocalStore{dir: abs, tmp: filepath.Join(abs, tmpDir)}
	if err := os.MkdirAll(s.tmp, 0o750); err != nil {
		return nil, fmt.Errorf("create blob dir: %w", err)
	}
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return nil, fmt.Errorf("read blob temp dir: %w", err)
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
			_ = os.RemoveAll(filepath.Join(s.tmp, e.Name()))
		}
	}
	return s, nil
}

// Dir is the store's root directory.
func (s *LocalStore) Dir() string { return s.dir }

func (s *LocalStore) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, filepath.FromSlash(key)), nil
}

// Put implements Store.
func (s *LocalStore) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := s.path(key)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, ctxReader{ctx: ctx, r: r})
	if err != nil {
		return n, fmt.Errorf("put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return n, fmt.Errorf("put %s: sync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("put %s: close: %w", key, err)
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		return n, fmt.Errorf("put %s: %w", key, err)
	}
	// A Delete of the last key under a directory on the way may remove it
	// (pruneEmpty) while MkdirAll makes the ones below it, or between
	// MkdirAll and the rename: either then fails as not existing. Make the
	// path again and retry, a few times, which only a storm of such deletes
	// could exhaust.
	for try := 1; ; try++ {
		err := os.MkdirAll(filepath.Dir(p), 0o750)
		if err == nil {
			err = os.Rename(tmp, p)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || try == 10 {
			return n, fmt.Errorf("put %s: %w", key, err)
		}
	}
	done = true
	syncDir(filepath.Dir(p))
	return n, nil
}

// syncDir makes a rename durable. Failure only weakens durability after a power
// loss, and some filesystems refuse it, so it is not reported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Open implements Store.
func (s *LocalStore) Open(ctx context.Context, key string) (io.ReadSeekCloser, Info, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, Info{}, fmt.Errorf("open %s: %w", key, err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, Info{}, notFound(key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("open %s: %w", key, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return f, Info{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Stat implements Store.
func (s *LocalStore) Stat(ctx context.Context, key string) (Info, error) {
	p, err := s.path(key)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, fmt.Errorf("stat %s: %w", key, err)
	}
	st, err := os.Stat(p)
	if err != nil {
		return Info{}, notFound(key, err)
	}
	if !st.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return Info{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete implements Store.
func (s *LocalStore) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if !st.Mode().IsRegular() {
		return nil // a directory of other keys is not a blob
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	s.pruneEmpty(filepath.Dir(p))
	return nil
}

// pruneEmpty removes dir and its parents up to the store's root while they
// are empty. Every video and every upload has directories of its own, so a
// store that only deleted files would keep an empty directory for each
// video it ever held: millions of inodes, and a List that walks them all.
// os.Remove refuses a directory that is not empty, so a key put meanwhile
// stops it (and a Put that loses its directory to it makes it again).
func (s *LocalStore) pruneEmpty(dir string) {
	for dir != s.dir && dir != s.tmp && strings.HasPrefix(dir, s.dir+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// List implements Store: a walk of the directory below the prefix, leaving
// out the temporary directory of unfinished puts.
func (s *LocalStore) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		// Walk from the deepest directory the prefix names whole, and filter
		// the rest by key.
		root := s.dir
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			if err := ValidateKey(prefix[:i]); err != nil {
				yield(Info{}, err)
				return
			}
			root = filepath.Join(s.dir, filepath.FromSlash(prefix[:i]))
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // the prefix's directory does not exist: nothing to list
				}
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.IsDir() {
				if p == s.tmp {
					return fs.SkipDir
				}
				return nil
			}
			rel, err := filepath.Rel(s.dir, p)
			if err != nil {
				return err
			}
			key := filepath.ToSlash(rel)
			if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) || ValidateKey(key) != nil {
				return nil
			}
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted since the directory was read
			}
			if err != nil {
				return err
			}
			if !yield(Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(Info{}, fmt.Errorf("list %q: %w", prefix, err))
		}
	}
}

// errStop ends a walk whose consumer stopped.
var errStop = errors.New("stop")

// notFound maps a missing file (or a path through a file) to ErrNotFound.
func notFound(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("blob %s: %w", key, err)
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
