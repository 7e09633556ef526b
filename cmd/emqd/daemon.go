package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// daemonEnv marks the copy of the process that daemonize yes starts.
const daemonEnv = "EMQD_DAEMONIZED"

// defaultPidFile is the pid file of daemonize yes without pidfile (Valkey
// writes /var/run/valkey.pid).
const defaultPidFile = "/var/run/emqd.pid"

// daemonize is daemonize yes (docs/operations.md §3.2): Go cannot fork, so
// the process starts a copy of itself, with the same arguments, in a new
// session (setsid) with standard input, output and error on /dev/null, as
// Valkey's daemonize() leaves them, and waits for its word on a pipe: ""
// once it is serving (exit 0) or why it failed (printed, exit 1). A
// config read from standard input is handed to the copy the same way.
func daemonize(configText []byte, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	defer devnull.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	if configText != nil {
		cmd.Stdin = bytes.NewReader(configText)
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	w.Close()
	msg, err := bufio.NewReader(r).ReadString(0)
	r.Close()
	if err == nil && msg == "\x00" {
		cmd.Process.Release()
		return 0
	}
	msg = strings.TrimSuffix(msg, "\x00")
	if msg == "" {
		msg = "emqd: the daemon exited before it was serving"
	}
	fmt.Fprintln(stderr, msg)
	cmd.Wait()
	return 1
}

// tellParent sends the daemon's word to the process that started it (nil:
// not a daemon): "" when serving, else the reason it stops.
func tellParent(ready *os.File, msg string) {
	if ready == nil {
		return
	}
	ready.WriteString(msg + "\x00")
	ready.Close()
}
