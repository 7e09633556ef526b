package server

import "testing"

// TestDebugClockAdvanceWallClock: the binary's path (no clock given, so the
// wall clock) with enable-debug-command yes: EMQ.DEBUG CLOCK ADVANCE must
// move the clock the verbs read, so a delayed job comes due at once.
func TestDebugClockAdvanceWallClock(t *testing.T) {
	s := startServer(t, map[string]string{"enable-debug-command": "yes"}, nil)
	c := dial(t, s)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"EMQ.ENQUEUE", "t", "JOB00000000001", "x", "DELAY", "100000"}, "$14\r\nJOB00000000001\r\n"},
		{[]string{"EMQ.PROMOTE", "t"}, ":0\r\n"},
		{[]string{"EMQ.DEBUG", "CLOCK", "ADVANCE", "200000"}, "+OK\r\n"},
		{[]string{"EMQ.PROMOTE", "t"}, ":1\r\n"},
	}
	for _, st := range steps {
		if got := c.Do(st.args...); got != st.want {
			t.Fatalf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
}
