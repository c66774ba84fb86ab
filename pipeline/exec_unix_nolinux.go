//go:build unix && !linux

package pipeline

import "syscall"

// diesWithParent does nothing where the kernel has no parent-death signal
// that Go sets; a runner may outlive an agent that is killed.
func diesWithParent(*syscall.SysProcAttr) {}
