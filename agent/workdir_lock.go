//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockWorkDir takes the exclusive lock of dir's lockFile, without waiting,
// and writes this process's pid in it; release drops it. flock belongs to
// the open file description, so a second open, in another process or this
// one, is refused while the first is held; the descriptor is close-on-exec,
// so runners never inherit it (a leftover child holding it would refuse
// the next agent).
func lockWorkDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: --work-dir: lock: %w", ErrConfig, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, inUse(dir, strings.TrimSpace(string(pid)))
		}
		return nil, fmt.Errorf("%w: --work-dir: lock %s: %w", ErrConfig, path, err)
	}
	// The pid is for the refused agent's message only: a failure to write
	// it costs nothing but that.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
