//go:build !linux && !darwin

package server

import (
	"errors"
	"fmt"
)

// diskSpace is not measured on this system: the data directory's disk
// metrics are left out.
func diskSpace(dir string) (avail, size uint64, err error) {
	return 0, 0, fmt.Errorf("disk space of %s: %w", dir, errors.ErrUnsupported)
}
