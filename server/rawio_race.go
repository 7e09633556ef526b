//go:build race

package server

// rawSyscalls is false under the race detector: rawRead and rawWrite then
// call syscall.Read and syscall.Write, whose race annotations order a
// write to a socket before the read of it at the other end (a test that
// reads a variable after a reply would otherwise be reported as racing
// with the command that set it). rawio.go.
const rawSyscalls = false
