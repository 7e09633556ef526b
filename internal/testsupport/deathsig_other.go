//go:build !linux

package testsupport

import "os/exec"

// DieWithParent does nothing outside Linux (no PR_SET_PDEATHSIG): a child
// outlives a test binary killed by a signal there.
func DieWithParent(cmd *exec.Cmd) {}
