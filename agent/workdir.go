package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// taskDirPrefix starts the name of every task directory in the work dir.
const taskDirPrefix = "task-"

// ErrWorkDirInUse means another agent, alive, holds the work dir's lock:
// two agents on one work dir would take each other's live runners for an
// earlier run's leftovers and kill them, and overwrite each other's node
// credential. The message names the holder's pid.
var ErrWorkDirInUse = errors.New("agent: the work dir is in use by another agent")

// lockFile, in the work dir, is the file whose lock (flock, exclusive)
// makes the directory one agent's. It holds the holder's pid, for the
// message of the agent it refuses. The kernel drops the lock when the
// holder's process ends, however it ends, so a killed agent's restart is
// not refused; the file itself stays (removing it would let a third agent
// lock a new file while the second still holds the old one).
const lockFile = "agent.lock"

// prepareWorkDir creates dir, makes it this agent's (lockWorkDir), and
// removes the task directories that an earlier run of the agent left
// behind (a crash, a kill -9), after ending the processes still working in
// them: a runner's own children, which the kernel's parent-death signal
// (pipeline) does not reach, run in its task directory unless they leave
// it. The lock comes first: without it a second agent would take the first
// one's running tasks for leftovers. release gives the lock back.
func prepareWorkDir(dir string, log *slog.Logger) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: --work-dir: %w", ErrConfig, err)
	}
	release, err = lockWorkDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: --work-dir: %w", ErrConfig, err)
	}
	var leftovers []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), taskDirPrefix) {
			leftovers = append(leftovers, filepath.Join(dir, e.Name()))
		}
	}
	if len(leftovers) > 0 {
		killWorkingIn(leftovers, log)
	}
	for _, d := range leftovers {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("work dir: remove leftover %s: %w", filepath.Base(d), err)
		}
	}
	return release, nil
}

// inUse is the error of a work dir whose lock another agent holds; pid
// is what its lock file says ("" if nothing yet).
func inUse(dir, pid string) error {
	holder := "another agent"
	if pid != "" {
		holder = "the agent with pid " + pid
	}
	return fmt.Errorf("%w: %s holds %s (a second agent on it would kill the first one's runners "+
		"and take its node credential): give each agent on this machine its own --work-dir",
		ErrWorkDirInUse, holder, filepath.Join(dir, lockFile))
}

// workDirFull reports whether the work dir holds more than
// Config.WorkDirMaxBytes, and its size (0 when there is no bound).
func (a *agent) workDirFull() (bool, int64) {
	if a.cfg.WorkDirMaxBytes == 0 {
		return false, 0
	}
	size, err := dirSize(a.cfg.WorkDir)
	if err != nil {
		a.log.Warn("cannot measure the work dir", "work_dir", a.cfg.WorkDir, "err", err)
	}
	return size > a.cfg.WorkDirMaxBytes, size
}

// dirSize sums the sizes of the regular files under dir. Files that vanish
// while it walks (a task ending) are skipped.
func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total, err
}

// credentialFile holds, in the work dir, the node credential of the
// agent's last registration, so that an agent that restarts after a crash
// proves the node still registered under its name is its own and replaces
// it at once (wire.HeaderPreviousCredential). It is a secret: mode 0600.
const credentialFile = "node-credential"

// loadCredential reads the credential a former run kept; "" if none.
func loadCredential(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, credentialFile))
	if os.IsNotExist(err) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read the kept node credential: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// saveCredential keeps cred for the next run, whole or not at all.
func saveCredential(dir, cred string) error {
	tmp, err := os.CreateTemp(dir, credentialFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	if _, err := tmp.WriteString(cred + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, credentialFile))
}
