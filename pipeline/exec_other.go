//go:build !unix

package pipeline

import "os/exec"

// killGroupOnCancel keeps exec.CommandContext's default (kill the process).
func killGroupOnCancel(*exec.Cmd) {}
