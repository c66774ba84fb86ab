package pipeline

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The kernel SIGKILLs every program the pipeline starts when the agent
// dies (Pdeathsig), so a SIGKILLed or crashed agent does not leave a runner
// holding a GPU until it ends on its own. (Its own children, if it does not
// end them, are killed by the next agent's start: agent.prepareWorkDir.)
//
// The kernel sends Pdeathsig when the thread that forked the child exits,
// not the process, and Go ends a thread whose goroutine exits while locked
// to it. So every program is started from one goroutine locked to its
// thread for the life of the process (Go's own advice in
// syscall.SysProcAttr and golang/go#27505): that thread never ends before
// the agent does.
var (
	starterOnce sync.Once
	starts      chan startRequest
)

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// start runs cmd.Start on the starter thread, with the parent-death signal.
func start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	starterOnce.Do(func() {
		starts = make(chan startRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range starts {
				r.done <- r.cmd.Start()
			}
		}()
	})
	r := startRequest{cmd: cmd, done: make(chan error, 1)}
	starts <- r
	return <-r.done
}
