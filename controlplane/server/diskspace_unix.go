//go:build linux || darwin

package server

import (
	"fmt"
	"syscall"
)

// diskSpace returns the bytes free to unprivileged users and the size of the
// filesystem that holds dir (statfs(2)).
func diskSpace(dir string) (avail, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	return st.Bavail * bs, st.Blocks * bs, nil
}
