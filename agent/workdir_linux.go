package agent

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// killWorkingIn SIGKILLs every process whose working directory is dir or
// below it (read from /proc/PID/cwd; processes this user may not inspect
// are skipped) and logs each. The agent runs a runner in its task's
// directory, so what a killed agent's runner left running is found there.
func killWorkingIn(dir string, log *slog.Logger) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		log.Warn("cannot list processes to end those left in a task directory", "dir", dir, "err", err)
		return
	}
	// /proc shows a working directory as an absolute path with its links
	// resolved.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err != nil || !within(strings.TrimSuffix(cwd, " (deleted)"), dir) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			log.Warn("cannot end a process left in a task directory", "pid", pid, "dir", dir, "err", err)
			continue
		}
		log.Warn("ended a process an earlier run of the agent left in its task directory", "pid", pid, "dir", dir)
	}
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
