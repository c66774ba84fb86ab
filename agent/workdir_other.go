//go:build !linux

package agent

import "log/slog"

// killWorkingIn does nothing where there is no /proc to find a process's
// working directory in.
func killWorkingIn([]string, *slog.Logger) {}
