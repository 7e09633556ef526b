package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/emqd/emqd/internal/store"
	"github.com/emqd/emqd/internal/verbs"
)

// The Prometheus endpoint (docs/architecture.md §6): with metrics-addr
// set (off by default), emqd serves GET /metrics on that address in the
// Prometheus text format, from its own registry (never the global one, so
// several embedded servers can run in one process):
//
//	emqd_queue_jobs{db,queue,state}            gauge: ZCARD of the queue's pending, active,
//	                                           schedule ("scheduled") and dead sets, read at scrape
//	emqd_lane_jobs{db,queue,lane,state}        gauge: pending and active (slots held) of each
//	                                           lane (docs/verbs.md §4.26.5): the 10 lanes of a
//	                                           queue with the most jobs, the rest summed as
//	                                           lane="(other)" (not a lane name), read at scrape
//	emqd_queue_latency_seconds{db,queue}       gauge: age of the job the next claim takes
//	                                           (EMQ.COUNTS latency_ms), read at scrape
//	emqd_jobs_total{db,queue,transition}       counter: verbs.Transition names, since start
//	emqd_command_duration_seconds{command}     histogram: handler time per command (commandstats names)
//	emqd_connected_clients, emqd_blocked_clients               gauges
//	emqd_clients_memory_bytes                  gauge: what the clients hold (INFO mem_clients_normal)
//	emqd_clients_recent_max_input_buffer_bytes, emqd_clients_recent_max_output_buffer_bytes
//	                                           gauges: INFO client_recent_max_*_buffer
//	emqd_connections_received_total, emqd_rejected_connections_total
//	emqd_bad_row_refusals_total                counter: docs/verbs.md §2.11
//	emqd_sweep_jobs_total{result}              counter: the opt-in sweeper's recovered / dead
//	emqd_schedule_lag_seconds                  histogram: slot time to enqueue of every fired
//	                                           schedule occurrence (docs/verbs.md §4.22.7)
//	emqd_build_info{version}                   gauge 1
//	go_*, process_*                            the client library's runtime collectors
//
// The queues are the known ones (see verbs.Stats: seen by a verb since
// start, or present at boot).

// commandBuckets are the latency histogram's upper bounds in seconds:
// 10 µs to 1 s (most commands take microseconds; a slow one shows in the
// top buckets and in SLOWLOG).
var commandBuckets = []float64{
	.00001, .000025, .00005, .0001, .00025, .0005,
	.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1,
}

// metricsServer is the endpoint of one server.
type metricsServer struct {
	reg  *prometheus.Registry
	hist *prometheus.HistogramVec
	ln   net.Listener
	srv  *http.Server
	// dashboard stops the web dashboard (nil: directive dashboard no).
	dashboard func() error
}

// cmdHist is a command's latency histogram child, created on the
// command's first call so commands never called export nothing. It is
// used under the store lock only (command.call).
type cmdHist struct {
	vec  *prometheus.HistogramVec
	name string
	o    prometheus.Observer
}

func (h *cmdHist) observe(d time.Duration) {
	if h.o == nil {
		h.o = h.vec.WithLabelValues(h.name)
	}
	h.o.Observe(d.Seconds())
}

// startMetrics builds the registry, attaches a histogram to every command
// of the table and starts serving addr.
func startMetrics(s *Server, addr string) (*metricsServer, error) {
	m := &metricsServer{reg: prometheus.NewRegistry()}
	m.hist = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "emqd_command_duration_seconds",
		Help:    "Time spent running each command (its handler, under the store lock), by command name as in INFO commandstats.",
		Buckets: commandBuckets,
	}, []string{"command"})
	counterFunc := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	gaugeFunc := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "emqd_build_info", Help: "emqd's version (the value is 1).",
		ConstLabels: prometheus.Labels{"version": Version},
	})
	build.Set(1)
	sweep := func(result string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "emqd_sweep_jobs_total",
			Help:        "Jobs the opt-in stalled-job sweeper (emq-sweep-interval-ms) recovered or dead-lettered.",
			ConstLabels: prometheus.Labels{"result": result},
		}, f)
	}
	cs := []prometheus.Collector{
		m.hist,
		build,
		&queueCollector{s: s},
		schedLagCollector{s: s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gaugeFunc("emqd_connected_clients", "Client connections open (INFO connected_clients).", func() float64 {
			s.clientsMu.Lock()
			defer s.clientsMu.Unlock()
			return float64(len(s.clients))
		}),
		gaugeFunc("emqd_clients_memory_bytes", "Memory the connected clients hold: their state, read buffers, requests not yet run and unsent replies (INFO mem_clients_normal, MEMORY STATS clients.normal; docs/operations.md §4).", func() float64 {
			s.store.Lock()
			defer s.store.Unlock()
			return float64(s.clientsMemory(nil))
		}),
		gaugeFunc("emqd_clients_recent_max_input_buffer_bytes", "The biggest input buffer one client held in the last 8 s (INFO client_recent_max_input_buffer; docs/operations.md §4).", func() float64 {
			s.store.Lock()
			defer s.store.Unlock()
			in, _ := s.recentPeaksLocked()
			return float64(in)
		}),
		gaugeFunc("emqd_clients_recent_max_output_buffer_bytes", "The biggest unsent output one client held in the last 8 s (INFO client_recent_max_output_buffer; docs/operations.md §4).", func() float64 {
			s.store.Lock()
			defer s.store.Unlock()
			_, out := s.recentPeaksLocked()
			return float64(out)
		}),
		gaugeFunc("emqd_blocked_clients", "Clients parked in a blocking command (EMQ.CLAIM BLOCK, EMQ.WAIT; INFO blocked_clients).", func() float64 {
			s.store.Lock()
			defer s.store.Unlock()
			return float64(s.blk.count)
		}),
		counterFunc("emqd_connections_received_total", "Connections accepted (INFO total_connections_received).",
			func() float64 { return float64(s.statConns.Load()) }),
		counterFunc("emqd_rejected_connections_total", "Connections refused by maxclients (INFO rejected_connections).",
			func() float64 { return float64(s.statRejected.Load()) }),
		counterFunc("emqd_bad_row_refusals_total", "Verbs refused because of stored data (docs/verbs.md §2.11; INFO emq_bad_row_refusals).",
			func() float64 { return float64(s.verbs.BadRowRefusals()) }),
		// RDB snapshots (rdb.go; INFO rdb_saves, rdb_last_bgsave_status,
		// rdb_changes_since_last_save, rdb_last_save_time).
		counterFunc("emqd_rdb_saves_total", "Snapshots written to dump.rdb (SAVE, BGSAVE, save points, shutdown; INFO rdb_saves).",
			func() float64 { return float64(s.rdb.stat(func(r *saver) int64 { return r.saves })) }),
		gaugeFunc("emqd_rdb_last_bgsave_ok", "1 when the last background save succeeded (or none ran), 0 when it failed (INFO rdb_last_bgsave_status).",
			func() float64 {
				return float64(s.rdb.stat(func(r *saver) int64 {
					if r.lastOK.Load() {
						return 1
					}
					return 0
				}))
			}),
		gaugeFunc("emqd_rdb_changes_since_last_save", "Writes since the last successful snapshot (INFO rdb_changes_since_last_save).",
			func() float64 { return float64(s.rdb.changes()) }),
		gaugeFunc("emqd_rdb_last_save_timestamp_seconds", "Unix time of the last successful snapshot, or of the start (LASTSAVE).",
			func() float64 { return float64(s.rdb.stat(func(r *saver) int64 { return r.lastSave })) }),
		sweep("recovered", func() float64 { return float64(s.obs.sweepRecovered.Load()) }),
		sweep("dead", func() float64 { return float64(s.obs.sweepDead.Load()) }),
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, e := range s.reg.allCommands() {
		e.hist = &cmdHist{vec: m.hist, name: e.name}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	m.ln = ln
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	if s.Config("dashboard") == "yes" {
		m.dashboard = s.mountDashboard(mux)
	}
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(ln)
	s.log.Info("Metrics endpoint listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	if m.dashboard != nil {
		s.log.Info("Dashboard listening", "addr", "http://"+ln.Addr().String()+dashboardPrefix)
		if !s.passwordSet() && !isLoopback(ln.Addr()) {
			s.log.Warn("The dashboard is served beyond loopback without requirepass: anyone who reaches it can pause queues and remove jobs (set requirepass, or dashboard no)",
				"addr", ln.Addr().String())
		}
	}
	return m, nil
}

// close stops the endpoint (an OnClose hook): in-flight scrapes get a
// moment to finish.
func (m *metricsServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = m.srv.Close()
	}
	if m.dashboard != nil {
		m.dashboard()
	}
	return err
}

// MetricsAddr is the address the metrics endpoint listens on ("" when
// metrics-addr is empty); with metrics-addr 127.0.0.1:0 it is the port
// drawn.
func (s *Server) MetricsAddr() string {
	if s.obs == nil || s.obs.metrics == nil {
		return ""
	}
	return s.obs.metrics.ln.Addr().String()
}

// MetricsGatherer is the endpoint's registry (nil when metrics-addr is
// empty), for tests and for embedding applications that serve it
// themselves.
func (s *Server) MetricsGatherer() prometheus.Gatherer {
	if s.obs == nil || s.obs.metrics == nil {
		return nil
	}
	return s.obs.metrics.reg
}

// queueCollector reports the known queues' depths and transition counts.
type queueCollector struct{ s *Server }

var (
	queueJobsDesc = prometheus.NewDesc("emqd_queue_jobs",
		"Jobs in a queue's pending, active, scheduled and dead sets, and its flow parents waiting on children (waiting; ZCARD at scrape time).",
		[]string{"db", "queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc("emqd_queue_latency_seconds",
		"Age of the job the next claim of the queue takes, the oldest among its lanes' heads, on the server clock (EMQ.COUNTS latency_ms, docs/verbs.md §4.16; 0 with nothing pending).",
		[]string{"db", "queue"}, nil)
	laneJobsDesc = prometheus.NewDesc("emqd_lane_jobs",
		"Pending jobs and slots held (active) of a queue's lanes (docs/verbs.md §4.26.5): the 10 lanes with the most jobs, the others summed as lane=\"(other)\".",
		[]string{"db", "queue", "lane", "state"}, nil)
	jobsTotalDesc = prometheus.NewDesc("emqd_jobs_total",
		"Job state changes applied by the EMQ.* verbs since the server started (refusals count nothing).",
		[]string{"db", "queue", "transition"}, nil)
)

// queueStates are the state label values, in the order of the Keys sets.
var queueStates = [5]string{"pending", "active", "scheduled", "dead", "waiting"}

func (qc *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueJobsDesc
	ch <- queueLatencyDesc
	ch <- laneJobsDesc
	ch <- jobsTotalDesc
}

// MetricsTopLanes is how many lanes of a queue /metrics names; the others
// are summed into lane="(other)", so the label set stays bounded however
// many lanes (tenants) a queue has.
const MetricsTopLanes = 10

// topLanes keeps the MetricsTopLanes lanes with the most jobs (pending +
// active; ties by name) and sums the rest into one "(other)" entry.
func topLanes(v []verbs.LaneView) []verbs.LaneView {
	if len(v) <= MetricsTopLanes {
		return v
	}
	out := append([]verbs.LaneView(nil), v...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pending+out[i].Active > out[j].Pending+out[j].Active })
	other := verbs.LaneView{Name: "(other)"}
	for _, l := range out[MetricsTopLanes:] {
		other.Pending += l.Pending
		other.Active += l.Active
	}
	return append(out[:MetricsTopLanes], other)
}

func (qc *queueCollector) Collect(ch chan<- prometheus.Metric) {
	s := qc.s
	st := s.EMQStats()
	if st == nil {
		return
	}
	qs := st.Queues()
	depth := make([][5]int, len(qs))
	lat := make([]int64, len(qs))
	lanes := make([][]verbs.LaneView, len(qs))
	s.store.Lock()
	now := s.clock.NowMs()
	for i, q := range qs {
		if q.DB >= s.store.NumDBs() {
			continue
		}
		db := s.store.DB(q.DB)
		k := verbs.NewKeys(q.Queue)
		for j, key := range [5]string{k.Pending, k.Active, k.Schedule, k.Dead, k.Waiting} {
			// Peek: a scrape is no access (OBJECT IDLETIME, LRU), as
			// LaneCounts and QueueLatencyMs read.
			if v := db.Peek(key); v != nil && v.Kind == store.KindZSet {
				depth[i][j] = v.ZSet.Len()
			}
		}
		lat[i] = verbs.QueueLatencyMs(db, k, now)
		var v []verbs.LaneView
		verbs.LaneCounts(db, k, func(name string, pending, active int64) {
			if name != verbs.DefaultLane {
				depth[i][0] += int(pending) // the default lane's are in k.Pending
			}
			v = append(v, verbs.LaneView{Name: name, Pending: pending, Active: active})
		})
		if len(v) > 0 {
			lanes[i] = topLanes(v)
		}
	}
	s.store.Unlock()
	for i, q := range qs {
		dbl := itoa(int64(q.DB))
		for j, state := range queueStates {
			ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(depth[i][j]), dbl, q.Queue, state)
		}
		ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, float64(lat[i])/1000, dbl, q.Queue)
		for _, l := range lanes[i] {
			ch <- prometheus.MustNewConstMetric(laneJobsDesc, prometheus.GaugeValue, float64(l.Pending), dbl, q.Queue, l.Name, "pending")
			ch <- prometheus.MustNewConstMetric(laneJobsDesc, prometheus.GaugeValue, float64(l.Active), dbl, q.Queue, l.Name, "active")
		}
		for t := verbs.Transition(0); t < verbs.NumTransitions; t++ {
			ch <- prometheus.MustNewConstMetric(jobsTotalDesc, prometheus.CounterValue, float64(q.Count(t)), dbl, q.Queue, t.String())
		}
	}
}

var schedLagDesc = prometheus.NewDesc("emqd_schedule_lag_seconds",
	"Time from a schedule's slot to the enqueue of its occurrence (docs/verbs.md §4.22.7).", nil, nil)

// schedLagCollector exports verbs.Stats' schedule lag histogram.
type schedLagCollector struct{ s *Server }

func (c schedLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- schedLagDesc }

func (c schedLagCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.EMQStats()
	if st == nil {
		return
	}
	counts, sum, _ := st.SchedLag()
	buckets := make(map[float64]uint64, len(verbs.SchedLagBucketsMs))
	var acc uint64
	for i, b := range verbs.SchedLagBucketsMs {
		acc += uint64(counts[i])
		buckets[float64(b)/1000] = acc
	}
	acc += uint64(counts[len(counts)-1])
	ch <- prometheus.MustNewConstHistogram(schedLagDesc, acc, float64(sum)/1000, buckets)
}
