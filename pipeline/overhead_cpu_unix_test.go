//go:build unix

package pipeline

import (
	"syscall"
	"time"
)

// childCPU is the user and system CPU time of every child process this
// process has waited for so far (getrusage RUSAGE_CHILDREN).
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
