package agent

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// taskDirPrefix starts the name of every task directory in the work dir.
const taskDirPrefix = "task-"

// prepareWorkDir creates dir and removes the task directories that an
// earlier run of the agent left behind (a crash, a kill -9), after ending
// the processes still working in them: a runner's own children, which the
// kernel's parent-death signal (pipeline) does not reach, run in its task
// directory unless they leave it.
func prepareWorkDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: work dir: %w", ErrConfig, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: work dir: %w", ErrConfig, err)
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
			return fmt.Errorf("work dir: remove leftover %s: %w", filepath.Base(d), err)
		}
	}
	return nil
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
