package testsupport

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child started with DieWithParent dies with the process that started
// it: a helper process (this test binary again) starts `sleep 600` and is
// SIGKILLed; the sleep must be gone within a few seconds.
func TestDieWithParentKillsTheChild(t *testing.T) {
	if os.Getenv("EMQD_DEATHSIG_HELPER") == "1" {
		cmd := exec.Command("sleep", "600")
		DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestDieWithParentKillsTheChild$")
	helper.Env = append(os.Environ(), "EMQD_DEATHSIG_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		helper.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		helper.Process.Kill()
		t.Fatalf("helper printed %q", line)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the child %d is not running before its parent dies: %v", pid, err)
	}
	helper.Process.Kill()
	helper.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		// A zombie still answers kill 0 until its new parent reaps it:
		// read its state.
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); len(st) > 0 && strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child %d outlived its SIGKILLed parent by 5 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
