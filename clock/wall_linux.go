package clock

import (
	"syscall"
	"time"
)

// wallMs is the wall clock in Unix milliseconds from one gettimeofday(2),
// which Go makes through the vDSO on Linux: about 40 ns on the benchmark
// machine against 95 for time.Now, which reads the monotonic clock too, and
// Wall.NowMs is read for every read and write of a connection
// (bench/README.md, "`-P 32` and `-P 1` (issue 25, round 6)"). If the call
// fails it is time.Now's.
func wallMs() int64 {
	var tv syscall.Timeval
	if err := syscall.Gettimeofday(&tv); err != nil {
		return time.Now().UnixMilli()
	}
	return tv.Sec*1000 + tv.Usec/1000
}
