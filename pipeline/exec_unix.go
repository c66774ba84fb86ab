//go:build unix

package pipeline

import (
	"os/exec"
	"syscall"
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
