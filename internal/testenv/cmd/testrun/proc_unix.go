//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a process group of its own, so that
// signalGroup reaches the test binaries go test starts, and a terminal's
// Ctrl-C reaches them only through testrun.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to cmd's process group.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		s = syscall.SIGINT
	}
	_ = syscall.Kill(-cmd.Process.Pid, s)
}
