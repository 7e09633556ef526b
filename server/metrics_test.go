package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/clock"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/server"
)

// scrape GETs the endpoint and parses it with the Prometheus text parser.
func scrape(t *testing.T, s *server.Server) map[string]*dto.MetricFamily {
	t.Helper()
	if s.MetricsAddr() == "" {
		t.Fatal("no metrics endpoint")
	}
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the endpoint's text does not parse: %v", err)
	}
	return fams
}

// metric returns the value of the sample of family name whose labels are
// exactly labels ("k=v" pairs); found false when there is none.
func metric(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName()+"="+l.GetValue() != labels[i] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// infoFields parses INFO text into name -> value.
func infoFields(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

type step struct {
	db   int
	args []any
	want string // the reply as fmt prints it, or the error text
}

// transitions lists verbs.Transition names in order.
var transitions = []string{"enqueued", "claimed", "completed", "failed", "failed_dead", "stall_recovered",
	"stall_dead", "promoted", "requeued", "delayed", "reprocessed", "removed"}

// TestMetricsAndInfoCounts: after a scripted sequence of verbs over two
// queues in two databases (refusals and a duplicate among them), INFO's
// # EMQ section and the Prometheus endpoint report the exact transition
// counts, depths and per-command call counts; after a restart on the same
// append-only file the queues are known again, at the same depths, and
// the replay counted nothing.
func TestMetricsAndInfoCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewManual(1_700_000_000_000)
	opts := server.Options{Clock: clk, Config: map[string]string{
		"metrics-addr": "127.0.0.1:0", "appendonly": "yes", "dir": dir, "appendfsync": "always"}}
	s := server.StartTest(t, opts)
	db0 := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer db0.Close()
	db1 := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: 1})
	defer db1.Close()

	const A, B, C, D, E = "JOB0000000000A", "JOB0000000000B", "JOB0000000000C", "JOB0000000000D", "JOB0000000000E"
	steps := []step{
		{0, []any{"EMQ.ENQUEUE", "mail", A, "a"}, A},
		{0, []any{"EMQ.ENQUEUE", "mail", B, "b", "DELAY", 1000}, B},
		{0, []any{"EMQ.ENQUEUE", "mail", C, "c"}, C},
		{0, []any{"EMQ.ENQUEUE", "mail", A, "dup"}, "redis: nil"},
		{0, []any{"EMQ.ENQUEUE", "mail", "JOB1", "x"}, "EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z"},
		{0, []any{"EMQ.CLAIM", "mail", 5000, "COUNT", 2}, "[[" + A + " a 1 0] [" + C + " c 1 0]]"},
		{0, []any{"EMQ.COMPLETE", "mail", A, 7}, "EMQSTALE complete token mismatch"},
		{0, []any{"EMQ.COMPLETE", "mail", A, 1}, "1"},
		{0, []any{"EMQ.COMPLETE", "mail", A, 1}, "EMQSTALE job gone"},
		{0, []any{"EMQ.FAIL", "mail", C, 1, 1, 0, "boom"}, "[dead 1]"},
		{0, []any{"ADVANCE", 1000}, ""},
		{0, []any{"EMQ.PROMOTE", "mail"}, "1"},
		{0, []any{"EMQ.CLAIM", "mail", 100}, "[[" + B + " b 1 0]]"},
		{0, []any{"ADVANCE", 100}, ""},
		{0, []any{"EMQ.STALLED.CHECK", "mail", 2}, "[[" + B + "] []]"},
		{1, []any{"EMQ.ENQUEUE", "sms", D, "d"}, D},
		{1, []any{"EMQ.ENQUEUE", "sms", E, "e", "DELAY", 60000}, E},
		{1, []any{"EMQ.CLAIM", "sms", 100}, "[[" + D + " d 1 0]]"},
		{1, []any{"ADVANCE", 100}, ""},
		{1, []any{"EMQ.STALLED.CHECK", "sms"}, "[[] [" + D + "]]"},
		{1, []any{"EMQ.REQUEUE", "sms", D, 1}, "EMQSTATE job is dead"},
	}
	for i, st := range steps {
		if st.args[0] == "ADVANCE" {
			clk.Advance(int64(st.args[1].(int)))
			continue
		}
		rdb := db0
		if st.db == 1 {
			rdb = db1
		}
		v, err := rdb.Do(ctx, st.args...).Result()
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "  ", " "))
		}
		if got != st.want {
			t.Fatalf("step %d %v: got %q, want %q", i, st.args, got, st.want)
		}
	}

	wantTotals := map[string]int64{"enqueued": 5, "claimed": 4, "completed": 1, "failed": 1, "failed_dead": 1,
		"stall_recovered": 1, "stall_dead": 1, "promoted": 1}
	info := infoFields(db0.Info(ctx, "emq").Val())
	if info["emq_queues"] != "2" {
		t.Errorf("emq_queues = %q, want 2", info["emq_queues"])
	}
	for _, tr := range transitions {
		if got := info["emq_"+tr]; got != strconv.FormatInt(wantTotals[tr], 10) {
			t.Errorf("INFO emq_%s = %q, want %d", tr, got, wantTotals[tr])
		}
	}
	if info["emq_bad_row_refusals"] == "" || info["emq_sweep_recovered"] != "0" {
		t.Errorf("INFO emq: %v", info)
	}
	// The section is part of the default INFO, after Keyspace.
	all := db0.Info(ctx).Val()
	if k, e := strings.Index(all, "# Keyspace"), strings.Index(all, "# EMQ\r\nemq_queues:2\r\n"); k < 0 || e < k {
		t.Errorf("INFO default: keyspace at %d, EMQ at %d", k, e)
	}

	perQueue := map[string]map[string]float64{
		"0/mail": {"enqueued": 3, "claimed": 3, "completed": 1, "failed": 1, "failed_dead": 1, "stall_recovered": 1, "promoted": 1},
		"1/sms":  {"enqueued": 2, "claimed": 1, "stall_dead": 1},
	}
	depths := map[string]map[string]float64{
		"0/mail": {"pending": 1, "dead": 1},
		"1/sms":  {"scheduled": 1, "dead": 1},
	}
	fams := scrape(t, s)
	checkQueues := func(fams map[string]*dto.MetricFamily, counts map[string]map[string]float64) {
		t.Helper()
		for q, want := range counts {
			db, name, _ := strings.Cut(q, "/")
			for _, tr := range transitions {
				got, ok := metric(fams, "emqd_jobs_total", "db="+db, "queue="+name, "transition="+tr)
				if !ok || got != want[tr] {
					t.Errorf("emqd_jobs_total{%s %s} = %v (%v), want %v", q, tr, got, ok, want[tr])
				}
			}
			for _, state := range []string{"pending", "active", "scheduled", "dead", "waiting"} {
				got, ok := metric(fams, "emqd_queue_jobs", "db="+db, "queue="+name, "state="+state)
				if !ok || got != depths[q][state] {
					t.Errorf("emqd_queue_jobs{%s %s} = %v (%v), want %v", q, state, got, ok, depths[q][state])
				}
			}
		}
		if n := len(fams["emqd_queue_jobs"].GetMetric()); n != 10 {
			t.Errorf("emqd_queue_jobs has %d series, want 10", n)
		}
	}
	checkQueues(fams, perQueue)
	for cmd, want := range map[string]float64{"emq.enqueue": 7, "emq.claim": 3, "emq.complete": 3, "emq.stalled.check": 2} {
		if got, ok := metric(fams, "emqd_command_duration_seconds", "command="+cmd); got != want {
			t.Errorf("emqd_command_duration_seconds{command=%q} count = %v (%v), want %v", cmd, got, ok, want)
		}
	}
	if _, ok := metric(fams, "emqd_command_duration_seconds", "command=emq.remove"); ok {
		t.Error("a command never called has a histogram")
	}
	if f := fams["emqd_command_duration_seconds"]; f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("command latency type %v", f.GetType())
	}
	if got, _ := metric(fams, "emqd_connected_clients"); got < 2 {
		t.Errorf("emqd_connected_clients = %v, want >= 2", got)
	}
	if got, ok := metric(fams, "emqd_blocked_clients"); !ok || got != 0 {
		t.Errorf("emqd_blocked_clients = %v (%v)", got, ok)
	}
	if got, _ := metric(fams, "emqd_build_info", "version="+server.Version); got != 1 {
		t.Errorf("emqd_build_info = %v", got)
	}

	// A blocked claimer shows in emqd_blocked_clients.
	blocked := make(chan error, 1)
	go func() { blocked <- db0.Do(ctx, "EMQ.CLAIM", "idle", 1000, "BLOCK", 0).Err() }()
	waitFor(t, func() bool { v, _ := metric(scrape(t, s), "emqd_blocked_clients"); return v == 1 })
	if err := db0.Do(ctx, "EMQ.ENQUEUE", "idle", "JOB0000000000F", "f").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}

	// Restart on the same file: the queues are known from the keyspace, the
	// depths are the same, and the replay counted nothing.
	db0.Close()
	db1.Close()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics"); err == nil {
		resp.Body.Close()
		t.Fatal("the metrics endpoint still answers after Close")
	}
	s2 := server.StartTest(t, opts)
	info = infoFields(s2.InfoText("emq"))
	if info["emq_queues"] != "3" || info["emq_enqueued"] != "0" || info["emq_claimed"] != "0" {
		t.Errorf("after restart: %v", info)
	}
	depths["0/idle"] = map[string]float64{"active": 1}
	restarted := []string{"0/mail", "1/sms", "0/idle"}
	fams = scrape(t, s2)
	for _, q := range restarted {
		db, name, _ := strings.Cut(q, "/")
		for _, state := range []string{"pending", "active", "scheduled", "dead", "waiting"} {
			got, _ := metric(fams, "emqd_queue_jobs", "db="+db, "queue="+name, "state="+state)
			if got != depths[q][state] {
				t.Errorf("after restart emqd_queue_jobs{%s %s} = %v, want %v", q, state, got, depths[q][state])
			}
		}
		for _, tr := range transitions {
			if got, _ := metric(fams, "emqd_jobs_total", "db="+db, "queue="+name, "transition="+tr); got != 0 {
				t.Errorf("after restart emqd_jobs_total{%s %s} = %v, want 0", q, tr, got)
			}
		}
	}
}

// fmtAny prints a go-redis reply compactly: arrays in brackets.
func fmtAny(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtAny(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return "<nil>"
	}
	return "?"
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testsupport.ClientTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached in %v", testsupport.ClientTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMetricsOff: without metrics-addr nothing listens and nothing is
// registered, while INFO's EMQ section still counts.
func TestMetricsOff(t *testing.T) {
	s := server.StartTest(t)
	if s.MetricsAddr() != "" || s.MetricsGatherer() != nil {
		t.Fatalf("metrics on by default: %q", s.MetricsAddr())
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	rdb.Do(context.Background(), "EMQ.ENQUEUE", "q", "*", "p")
	if info := infoFields(s.InfoText("emq")); info["emq_enqueued"] != "1" || info["emq_queues"] != "1" {
		t.Fatalf("INFO emq %v", info)
	}
}

// TestMetricsAddrInUse: a metrics-addr that cannot be bound fails Start
// and leaves nothing listening.
func TestMetricsAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := server.Start(server.Options{Config: map[string]string{"metrics-addr": ln.Addr().String()}})
	if err == nil {
		s.Close(context.Background())
		t.Fatal("Start succeeded on a busy metrics-addr")
	}
}

// TestSweeperCounted: the opt-in sweeper's recoveries and dead letters are
// counted in INFO, on the endpoint, and logged.
func TestSweeperCounted(t *testing.T) {
	var logs syncBuf
	clk := clock.NewManual(1_700_000_000_000)
	s := server.StartTest(t, server.Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Config: map[string]string{"emq-sweep-interval-ms": "100", "emq-max-stalled": "2", "metrics-addr": "127.0.0.1:0"}})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	rdb.Do(ctx, "EMQ.ENQUEUE", "q", "JOB0000000000A", "a")
	for round, want := range []string{"emq_sweep_recovered:1", "emq_sweep_dead:1"} {
		if got, err := rdb.Do(ctx, "EMQ.CLAIM", "q", 50).Slice(); err != nil || len(got) != 1 {
			t.Fatalf("round %d claim %v %v", round, got, err)
		}
		clk.Advance(100)
		waitFor(t, func() bool { return strings.Contains(s.InfoText("emq"), want+"\r\n") })
	}
	info := infoFields(s.InfoText("emq"))
	if info["emq_stall_recovered"] != "1" || info["emq_stall_dead"] != "1" {
		t.Fatalf("INFO %v", info)
	}
	fams := scrape(t, s)
	for _, r := range []string{"recovered", "dead"} {
		if got, _ := metric(fams, "emqd_sweep_jobs_total", "result="+r); got != 1 {
			t.Errorf("emqd_sweep_jobs_total{%s} = %v", r, got)
		}
	}
	if n := strings.Count(logs.String(), `msg="Stalled-job sweep" db=0 queue=q`); n != 2 {
		t.Errorf("%d sweep log lines:\n%s", n, logs.String())
	}
}

// syncBuf is a bytes.Buffer safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogs: start-up says version, port, run_id, dir and appendonly;
// refused connections and protocol errors are logged at the default
// level, rate-limited; commands log nothing.
func TestLogs(t *testing.T) {
	var logs syncBuf
	s := server.StartTest(t, server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Config: map[string]string{"maxclients": "1"}})
	start := time.Now()
	first, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.Write([]byte("PING\r\n"))
	buf := make([]byte, 64)
	if n, _ := first.Read(buf); string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("ping %q", buf[:n])
	}
	for i := 0; i < 3; i++ {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(nc)
		nc.Close()
		if string(b) != "-ERR max number of clients reached\r\n" {
			t.Fatalf("refused %q", b)
		}
	}
	first.Write([]byte("*1\r\n$x\r\n"))
	b, _ := io.ReadAll(first)
	if string(b) != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("protocol error reply %q", b)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "Protocol error from client") })
	out := logs.String()
	for _, want := range []string{
		`level=INFO msg="Ready to accept connections tcp" addr=` + s.Addr(),
		"run_id=" + s.RunID(), "version=" + server.Version, "appendonly=no", "dir=",
		`level=WARN msg="Refused connection: max number of clients reached" addr=127.0.0.1:`,
		`level=INFO msg="Protocol error from client"`, `err="ERR Protocol error: invalid bulk length"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if time.Since(start) < 900*time.Millisecond {
		if n := strings.Count(out, "Refused connection"); n != 1 {
			t.Errorf("%d refused-connection lines within a second, want 1:\n%s", n, out)
		}
	}
	if strings.Contains(out, "PING") {
		t.Errorf("a command was logged:\n%s", out)
	}
}

// TestLogFormatConfig: log-format accepts text and json only, and
// NewLogger's json handler writes JSON lines.
func TestLogFormatConfig(t *testing.T) {
	if _, err := server.Start(server.Options{Config: map[string]string{"log-format": "xml"}}); err == nil {
		t.Fatal("log-format xml accepted")
	}
	s := server.StartTest(t, server.Options{Config: map[string]string{"log-format": "json"}})
	if s.Config("log-format") != "json" {
		t.Fatalf("log-format %q", s.Config("log-format"))
	}
	var b bytes.Buffer
	server.NewLogger(&b, "json", slog.LevelInfo).Info("hello", "port", 6379)
	server.NewLogger(&b, "text", slog.LevelInfo).Debug("hidden")
	if got := b.String(); !strings.HasPrefix(got, `{"time":`) || !strings.HasSuffix(got, `"level":"INFO","msg":"hello","port":6379}`+"\n") {
		t.Fatalf("json log %q", got)
	}
}

// TestReadmeObservability: every metric and INFO field the README's
// "## Observability" section names exists, and every emqd_* metric and
// emq_* field emqd exports is named there.
func TestReadmeObservability(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## Observability\n")
	if i < 0 {
		t.Fatal("README has no \"## Observability\" section")
	}
	sec := text[i+1:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(emqd?_[a-z0-9_]+)`").FindAllStringSubmatch(sec, -1) {
		documented[m[1]] = true
	}
	s := server.StartTest(t, server.Options{Config: map[string]string{"metrics-addr": "127.0.0.1:0"}})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	rdb.Do(context.Background(), "EMQ.ENQUEUE", "q", "*", "p") // a queue and a histogram child
	exported := map[string]bool{}
	for name := range scrape(t, s) {
		if strings.HasPrefix(name, "emqd_") {
			exported[name] = true
		}
	}
	for k := range infoFields(s.InfoText("emq")) {
		exported[k] = true
	}
	for name := range exported {
		if !documented[name] {
			t.Errorf("%s is exported but not in the README", name)
		}
	}
	for name := range documented {
		if !exported[name] {
			t.Errorf("the README names %s, which emqd does not export", name)
		}
	}
}

// TestFlowMetrics: a waiting flow parent shows in INFO (emq_waiting_parents)
// and in /metrics (emqd_queue_jobs state=waiting); its release counts
// flow_released (docs/verbs.md §4.25).
func TestFlowMetrics(t *testing.T) {
	ctx := context.Background()
	s := server.StartTest(t, server.Options{Clock: clock.NewManual(1_700_000_000_000), Config: map[string]string{"metrics-addr": "127.0.0.1:0"}})
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	const p, c1 = "JOBP0000000001", "JOBC0000000001"
	if n, err := c.Do(ctx, "EMQ.FLOW", "album", p, "x", "CHILD", "img", c1, "a").Int(); err != nil || n != 2 {
		t.Fatal(n, err)
	}
	info := infoFields(c.Info(ctx, "emq").Val())
	if info["emq_waiting_parents"] != "1" || info["emq_enqueued"] != "2" {
		t.Fatalf("info %v", info)
	}
	if got, ok := metric(scrape(t, s), "emqd_queue_jobs", "db=0", "queue=album", "state=waiting"); !ok || got != 1 {
		t.Fatalf("waiting gauge %v %v", got, ok)
	}
	job, err := c.Do(ctx, "EMQ.CLAIM", "img", 1000).Slice()
	if err != nil {
		t.Fatal(err)
	}
	tok := job[0].([]any)[2]
	if err := c.Do(ctx, "EMQ.COMPLETE", "img", c1, tok).Err(); err != nil {
		t.Fatal(err)
	}
	info = infoFields(c.Info(ctx, "emq").Val())
	if info["emq_waiting_parents"] != "0" || info["emq_flow_released"] != "1" || info["emq_flow_dead"] != "0" {
		t.Fatalf("info after release %v", info)
	}
	fams := scrape(t, s)
	if got, _ := metric(fams, "emqd_jobs_total", "db=0", "queue=album", "transition=flow_released"); got != 1 {
		t.Fatalf("flow_released %v", got)
	}
	if got, ok := metric(fams, "emqd_queue_jobs", "db=0", "queue=album", "state=pending"); !ok || got != 1 {
		t.Fatalf("pending gauge %v %v", got, ok)
	}
}

// TestClientsMemoryMetric: /metrics' emqd_clients_memory_bytes is INFO
// memory's mem_clients_normal, and counts a client's half-sent request
// (50,000 bytes of a 100,000-byte SET); so does the recent input peak.
func TestClientsMemoryMetric(t *testing.T) {
	s := server.StartTest(t, server.Options{Config: map[string]string{"metrics-addr": "127.0.0.1:0"}})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + strings.Repeat("x", 50000))); err != nil {
		t.Fatal(err)
	}
	info := func() float64 {
		for _, l := range strings.Split(s.InfoText("memory"), "\r\n") {
			if v, ok := strings.CutPrefix(l, "mem_clients_normal:"); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n
			}
		}
		t.Fatal("no mem_clients_normal")
		return 0
	}
	waitFor(t, func() bool { return info() >= 50000 })
	if v, ok := metric(scrape(t, s), "emqd_clients_memory_bytes"); !ok || v != info() {
		t.Fatalf("emqd_clients_memory_bytes %v (%v), mem_clients_normal %v", v, ok, info())
	}
	// The recent input peak (INFO client_recent_max_input_buffer) counts
	// it too, once the clients cron has sampled it.
	recent := func() float64 {
		for _, l := range strings.Split(s.InfoText("clients"), "\r\n") {
			if v, ok := strings.CutPrefix(l, "client_recent_max_input_buffer:"); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n
			}
		}
		return -1
	}
	waitFor(t, func() bool { return recent() >= 50000 })
	if v, ok := metric(scrape(t, s), "emqd_clients_recent_max_input_buffer_bytes"); !ok || v != recent() {
		t.Fatalf("emqd_clients_recent_max_input_buffer_bytes %v (%v), INFO %v", v, ok, recent())
	}
	if v, ok := metric(scrape(t, s), "emqd_clients_recent_max_output_buffer_bytes"); !ok || v < 0 {
		t.Fatalf("emqd_clients_recent_max_output_buffer_bytes %v (%v)", v, ok)
	}
}
