package server

import "testing"

// TestRefusedExecAbortsTransaction: a refused EXEC (wrong arity, or NOAUTH)
// answers EXECABORT naming the reason and ends the transaction, inside MULTI
// or not (Valkey's rejectCommand -> execCommandAbort; checked against
// redis-server 7.0.15, which shares that path).
func TestRefusedExecAbortsTransaction(t *testing.T) {
	s := startServer(t, nil, nil)
	c := dial(t, s)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"EXEC", "x"}, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SET", "a", "1"}, "+QUEUED\r\n"},
		{[]string{"EXEC", "x"}, "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"EXISTS", "a"}, ":0\r\n"},
	}
	for _, st := range steps {
		if got := c.Do(st.args...); got != st.want {
			t.Fatalf("%q: got %q, want %q", st.args, got, st.want)
		}
	}

	p := startServer(t, map[string]string{"requirepass": "pw"}, nil)
	d := dial(t, p)
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"MULTI"}, "-NOAUTH Authentication required.\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n"},
	} {
		if got := d.Do(st.args...); got != st.want {
			t.Fatalf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
}
