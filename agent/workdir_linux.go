package agent

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// killWorkingIn SIGKILLs every process whose working directory is one of
// dirs or below it (read from /proc/PID/cwd, in one pass over /proc;
// processes this user may not inspect are skipped) and logs each. The agent
// runs a runner in its task's directory, so what a killed agent's runner
// left running is found there.
func killWorkingIn(dirs []string, log *slog.Logger) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		log.Warn("cannot list processes to end those left in task directories", "dirs", dirs, "err", err)
		return
	}
	// /proc shows a working directory as an absolute path with its links
	// resolved.
	roots := make([]string, len(dirs))
	for i, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		roots[i] = d
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		i := slices.IndexFunc(roots, func(d string) bool { return within(cwd, d) })
		if i < 0 {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			log.Warn("cannot end a process left in a task directory", "pid", pid, "dir", roots[i], "err", err)
			continue
		}
		log.Warn("ended a process an earlier run of the agent left in its task directory", "pid", pid, "dir", roots[i])
	}
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
