//go:build unix

package pipeline

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// killGroupOnCancel starts the program in its own process group and kills
// the whole group when the context is cancelled, so that children of a
// runner script (a model server, a shell pipeline) do not outlive it. On
// Linux the program is also killed when the agent dies (start).
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killLeftovers SIGKILLs what is left of the process group of cmd, which
// has exited: children it started and did not end. They belong to the
// task that has just ended (a model server a runner wants to keep runs
// apart from it: its own service, container or session). The group's id
// cannot be given to another process while any member is alive; when none
// is, the kill finds nothing (ESRCH) unless the id was reused in the
// microseconds since the program was reaped, which pid allocation, cycling
// through the whole pid range, does not do.
func killLeftovers(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killedBy names the signal that ended a process ("SIGKILL"), or "" when
// it exited.
func killedBy(ps *os.ProcessState) string {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if name := unix.SignalName(ws.Signal()); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(ws.Signal()))
}
