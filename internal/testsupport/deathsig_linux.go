package testsupport

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel SIGKILL cmd's process when the process
// that started it dies (prctl PR_SET_PDEATHSIG, kept across the exec of a
// wrapper such as `ip netns exec` or `taskset`). Call it before cmd.Start.
// Without it a test binary killed by a signal (go test's -timeout, a ^C, the
// OOM killer) left its valkey-server, redis-server or emqd children running,
// holding their ports and directories until the machine rebooted.
//
// The kernel ties the signal to the thread that forked, not the process:
// Go ends a thread only when a goroutine locked to it (runtime.LockOSThread)
// returns without unlocking, and no test does that.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
