package procs

import (
	"os"
	"testing"
)

var spinSink uint64

// TestSchedNanosOfSelf: SchedNanos reads this process's own schedstat: its
// CPU grows across a loop of work (no timing assumed: only that it is more
// than zero and grows), its run-queue wait never shrinks, and CPUNanos is
// its first half.
func TestSchedNanosOfSelf(t *testing.T) {
	pid := os.Getpid()
	cpu0, wait0, err := SchedNanos(pid)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 50_000_000; i++ {
		spinSink += i ^ spinSink>>3
	}
	cpu1, wait1, err := SchedNanos(pid)
	if err != nil {
		t.Fatal(err)
	}
	if cpu0 <= 0 || cpu1 <= cpu0 {
		t.Fatalf("CPU %d ns then %d ns: want > 0 and growing", cpu0, cpu1)
	}
	if wait0 < 0 || wait1 < wait0 {
		t.Fatalf("run-queue wait %d ns then %d ns: want >= 0 and never shrinking", wait0, wait1)
	}
	c, err := CPUNanos(pid)
	if err != nil || c < cpu1 {
		t.Fatalf("CPUNanos = %d, %v; want >= %d", c, err, cpu1)
	}
	if _, _, err := SchedNanos(-1); err == nil {
		t.Fatal("SchedNanos(-1): no error")
	}
}
