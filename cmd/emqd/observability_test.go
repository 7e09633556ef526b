package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
)

// lockedBuf is a bytes.Buffer the server's goroutines may write while the
// test reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunMetricsAndJSONLogs: the binary's --metrics-addr serves the
// Prometheus endpoint and --log-format json writes one JSON object per
// line, starting with the start-up facts.
func TestRunMetricsAndJSONLogs(t *testing.T) {
	port, mport := testsupport.FreePort(t), testsupport.FreePort(t) // decimal strings
	dir := t.TempDir()
	var out, errOut lockedBuf
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--port", port, "--dir", dir, "--appendonly", "yes",
			"--metrics-addr", "127.0.0.1:" + mport, "--log-format", "json"}, nil, &out, &errOut)
	}()
	var nc net.Conn
	var err error
	for i := 0; ; i++ {
		nc, err = net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			break
		}
		if i > 300 {
			t.Fatalf("emqd did not start: %v %s", err, errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testsupport.ClientTimeout))
	br := bufio.NewReader(nc)
	nc.Write([]byte("EMQ.ENQUEUE mail JOB0000000000A hello\r\n"))
	if line, _ := br.ReadString('\n'); line != "$14\r\n" {
		t.Fatalf("enqueue %q", line)
	}
	br.ReadString('\n')

	resp, err := http.Get("http://127.0.0.1:" + mport + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`emqd_jobs_total{db="0",queue="mail",transition="enqueued"} 1`,
		`emqd_queue_jobs{db="0",queue="mail",state="pending"} 1`,
		`emqd_command_duration_seconds_count{command="emq.enqueue"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	nc.Write([]byte("SHUTDOWN\r\n"))
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("emqd did not exit after SHUTDOWN")
	}
	msgs := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		msgs[m["msg"].(string)] = m
	}
	ready := msgs["Ready to accept connections tcp"]
	if ready == nil || fmt.Sprint(ready["port"]) != port || ready["appendonly"] != "yes" || len(ready["run_id"].(string)) != 40 || ready["dir"] != dir {
		t.Errorf("start-up line %v", ready)
	}
	for _, m := range []string{"Metrics endpoint listening", "User requested shutdown...", "Calling fsync() on the AOF file.", "emqd is now ready to exit, bye bye..."} {
		if msgs[m] == nil {
			t.Errorf("no %q line in %s", m, errOut.String())
		}
	}
}
