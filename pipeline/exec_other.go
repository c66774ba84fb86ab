//go:build !unix

package pipeline

import (
	"os"
	"os/exec"
)

// killGroupOnCancel keeps exec.CommandContext's default (kill the process).
func killGroupOnCancel(*exec.Cmd) {}

// killLeftovers does nothing where the program has no process group of
// its own.
func killLeftovers(*exec.Cmd) {}

// killedBy is "": only Unix ends processes by signals.
func killedBy(*os.ProcessState) string { return "" }
