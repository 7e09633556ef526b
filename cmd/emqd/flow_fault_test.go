package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/emqd/emqd/internal/testsupport"
	"github.com/emqd/emqd/server"
	"github.com/redis/go-redis/v9"
)

// TestFlowRandomFaults is the random-fault property of flows (docs/verbs.md
// §4.25): random trees (depth up to 3, up to 50 children), random child
// outcomes (complete with a result, fail to the cap, fail and retry, stall
// to death through the sweep on a moved clock, requeue, remove,
// reprocess), random restarts: most of them in-process (the server closed
// and started again on the same AOF, appendfsync always), some of them a
// real SIGKILL of the binary. After every step the server's parents agree
// with a model that applies the rules of §4.25.2; at the end every parent
// was released exactly once (claimed once, with token 1, and completed) or
// died exactly once as its policy says, the flow counters summed over the
// processes say the same, the children's results reached their parents
// (EMQ.CHILDREN), and once the dead jobs are removed no key of any flow is
// left. EMQD_FLOW_SEED=n repeats one run.
func TestFlowRandomFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts servers and the binary")
	}
	bin := filepath.Join(t.TempDir(), "emqd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	seeds := []uint64{1, 2, 3, 4}
	if s, err := strconv.ParseUint(os.Getenv("EMQD_FLOW_SEED"), 10, 64); err == nil {
		seeds = []uint64{s}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { runFlowFaults(t, bin, seed) })
	}
}

// flowTarget is the server under test: in-process or the binary.
type flowTarget struct {
	t      *testing.T
	bin    string
	dir    string
	port   string
	c      *redis.Client
	inproc *server.Server
	cmd    *exec.Cmd
	exited chan struct{}
	// released, dead: INFO's emq_flow_released and emq_flow_dead summed
	// over the processes that ended.
	released, dead  int64
	kills, restarts int
}

func (ft *flowTarget) start(binary bool) {
	t := ft.t
	t.Helper()
	args := map[string]string{"port": ft.port, "dir": ft.dir, "appendonly": "yes", "appendfsync": "always", "enable-debug-command": "yes"}
	if binary {
		var argv []string
		for k, v := range args {
			argv = append(argv, "--"+k, v)
		}
		ft.cmd = exec.Command(ft.bin, argv...)
		testsupport.DieWithParent(ft.cmd)
		logf, err := os.OpenFile(filepath.Join(ft.dir, "emqd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer logf.Close()
		ft.cmd.Stdout, ft.cmd.Stderr = logf, logf
		if err := ft.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ft.exited = make(chan struct{})
		cmd, exited := ft.cmd, ft.exited
		go func() { cmd.Wait(); close(exited) }()
	} else {
		delete(args, "port")
		args["bind"] = "127.0.0.1"
		args["port"] = ft.port
		s, err := server.Start(server.Options{Config: args})
		if err != nil {
			t.Fatal(err)
		}
		ft.inproc = s
	}
	ft.c = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + ft.port, Protocol: 2, MaxRetries: -1, ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	deadline := time.Now().Add(20 * time.Second)
	for ft.c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("emqd not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the running server (SIGKILL for the binary, Close in-process)
// after reading its flow counters.
func (ft *flowTarget) stop() {
	info := ft.c.Info(context.Background(), "emq").Val()
	ft.released += infoInt(info, "emq_flow_released")
	ft.dead += infoInt(info, "emq_flow_dead")
	ft.c.Close()
	if ft.cmd != nil {
		ft.cmd.Process.Signal(syscall.SIGKILL)
		<-ft.exited
		ft.cmd = nil
		ft.kills++
	} else {
		ft.inproc.Close(context.Background())
		ft.inproc = nil
	}
	ft.restarts++
}

func infoInt(info, field string) int64 {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func (ft *flowTarget) do(args ...any) (any, error) {
	return ft.c.Do(context.Background(), args...).Result()
}

func (ft *flowTarget) ok(args ...any) any {
	ft.t.Helper()
	v, err := ft.do(args...)
	if err != nil && err != redis.Nil {
		ft.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// mJob is one job of a flow in the model.
type mJob struct {
	q, id, ref string
	up         *mJob   // nil: a root
	kids       []*mJob // a parent's children
	policy     string
	// A parent's model: waiting, pending (released), dead; done when
	// completed by the test.
	state    string
	left     int
	entries  map[string]string // child ref -> pending, completed, dead, removed
	claims   int
	died     bool // a child of this parent died at least once
	released int
	killed   int
	// A leaf's life: ended (completed, dead or removed), the outcome.
	ended   bool
	outcome string
	result  string
}

func runFlowFaults(t *testing.T, bin string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 24))
	ft := &flowTarget{t: t, bin: bin, dir: t.TempDir(), port: testsupport.FreePort(t)}
	t.Cleanup(func() {
		if ft.cmd != nil {
			ft.cmd.Process.Kill()
		}
		if ft.inproc != nil {
			ft.inproc.Close(context.Background())
		}
	})
	ft.start(false)
	queues := []string{"fa", "fb", "fc"}
	jobs := map[string]*mJob{}
	var parents []*mJob
	var roots [][]any // each tree's EMQ.FLOW call
	var rootJobs []*mJob
	nid := 0
	newID := func() string { nid++; return fmt.Sprintf("JOB%c%010d", 'a'+rune(seed%26), nid) }

	// Trees: each node hangs under a random earlier node of depth < 3.
	for tree := 0; tree < 4; tree++ {
		root := &mJob{q: queues[rng.IntN(3)], id: newID(), policy: []string{"fail", "ignore", "continue"}[rng.IntN(3)]}
		root.ref = root.q + ":" + root.id
		nodes := []*mJob{root}
		depth := map[*mJob]int{root: 0}
		n := 1 + rng.IntN(50)
		for i := 0; i < n; i++ {
			var cands []*mJob
			for _, x := range nodes {
				if depth[x] < 3 {
					cands = append(cands, x)
				}
			}
			up := cands[rng.IntN(len(cands))]
			c := &mJob{q: queues[rng.IntN(3)], id: newID(), up: up}
			c.ref = c.q + ":" + c.id
			up.kids = append(up.kids, c)
			depth[c] = depth[up] + 1
			nodes = append(nodes, c)
		}
		args := []any{"EMQ.FLOW", root.q, root.id, "root", "ON_CHILD_FAIL", root.policy}
		for _, c := range nodes[1:] {
			args = append(args, "CHILD", c.q, c.id, "p-"+c.id)
			if c.up != root {
				args = append(args, "UNDER", c.up.q, c.up.id)
			}
		}
		// Inner parents get a random policy.
		for _, x := range nodes {
			jobs[x.ref] = x
			if len(x.kids) > 0 {
				if x != root {
					x.policy = []string{"fail", "ignore", "continue"}[rng.IntN(3)]
					// ON_CHILD_FAIL follows the child's own CHILD entry.
					for i := range args {
						if args[i] == x.id && args[i-1] == x.q && args[i-2] == "CHILD" {
							rest := append([]any{"ON_CHILD_FAIL", x.policy}, args[i+2:]...)
							args = append(args[:i+2:i+2], rest...)
							break
						}
					}
				}
				x.state, x.left, x.entries = "waiting", len(x.kids), map[string]string{}
				for _, c := range x.kids {
					x.entries[c.ref] = "pending"
				}
				parents = append(parents, x)
			}
		}
		if got := ft.ok(args...); got != int64(len(nodes)) {
			t.Fatalf("flow %d: %v, want %d", tree, got, len(nodes))
		}
		roots = append(roots, args)
		rootJobs = append(rootJobs, root)
	}

	// end applies docs/verbs.md §4.25.2 to the model.
	var end func(c *mJob, outcome string)
	end = func(c *mJob, outcome string) {
		p := c.up
		if p == nil || p.entries[c.ref] != "pending" {
			return
		}
		p.entries[c.ref] = outcome
		p.left--
		if outcome == "dead" {
			p.died = true
		}
		if p.state != "waiting" {
			return
		}
		switch {
		case outcome == "dead" && p.policy == "fail":
			p.state = "dead"
			p.killed++
			end(p, "dead")
		case outcome == "dead" && p.policy == "continue", p.left == 0:
			p.state = "pending"
			p.released++
		}
	}
	leafEnd := func(j *mJob, outcome string) {
		j.ended, j.outcome = true, outcome
		end(j, outcome)
	}
	// check compares every parent not completed with the server.
	check := func(step int, what string) {
		t.Helper()
		for _, p := range parents {
			row, _ := ft.do("HGETALL", "emq:{"+p.q+"}:job:"+p.id)
			m := map[string]string{}
			if a, ok := row.([]any); ok {
				for i := 0; i+1 < len(a); i += 2 {
					m[a[i].(string)] = a[i+1].(string)
				}
			} else if mm, ok := row.(map[any]any); ok {
				for k, v := range mm {
					m[k.(string)] = v.(string)
				}
			}
			if p.state == "done" {
				if len(m) != 0 {
					t.Fatalf("step %d (%s): completed parent %s has a row again: %v", step, what, p.ref, m)
				}
				continue
			}
			if m["state"] != p.state || m["children_left"] != strconv.Itoa(p.left) {
				t.Fatalf("step %d (%s): parent %s (%s) is %v, the model %s left %d", step, what, p.ref, p.policy, m, p.state, p.left)
			}
			inWaiting := ft.c.ZScore(context.Background(), "emq:{"+p.q+"}:waiting", p.id).Err() == nil
			if inWaiting != (p.state == "waiting") {
				t.Fatalf("step %d (%s): parent %s in waiting %v, state %s", step, what, p.ref, inWaiting, p.state)
			}
		}
	}

	var heldTok string // the token of the one job held (at most one at a time)
	claim := func(q string) *mJob {
		v := ft.ok("EMQ.CLAIM", q, 1000).([]any)
		if len(v) == 0 {
			return nil
		}
		e := v[0].([]any)
		j := jobs[q+":"+e[0].(string)]
		if j == nil {
			t.Fatalf("claimed an unknown job %v", e)
		}
		heldTok = e[2].(string)
		return j
	}
	finishParent := func(p *mJob) {
		p.claims++
		if heldTok != "1" {
			t.Fatalf("parent %s claimed with token %s: released more than once", p.ref, heldTok)
		}
		// Results flow up: every child ended, completed ones with their result.
		kids := ft.ok("EMQ.CHILDREN", p.q, p.id).([]any)
		if len(kids) != len(p.kids) {
			t.Fatalf("%s: %d children listed, %d in the flow", p.ref, len(kids), len(p.kids))
		}
		for i, k := range kids {
			f := map[string]any{}
			a := k.([]any)
			for j := 0; j+1 < len(a); j += 2 {
				f[a[j].(string)] = a[j+1]
			}
			c := p.kids[i]
			if f["id"] != c.id || f["queue"] != c.q {
				t.Fatalf("%s: child %d is %v, want %s", p.ref, i, f, c.ref)
			}
			want := p.entries[c.ref]
			if want == "pending" {
				// Under continue the parent runs before its other children end.
				continue
			}
			if f["state"] != want {
				t.Fatalf("%s: child %s state %v, the model %s", p.ref, c.ref, f["state"], want)
			}
			if want == "completed" && len(c.kids) == 0 && f["result"] != c.result {
				t.Fatalf("%s: child %s result %v, want %q", p.ref, c.ref, f["result"], c.result)
			}
		}
		ft.ok("EMQ.COMPLETE", p.q, p.id, heldTok, "RESULT", "r-"+p.id)
		p.result = "r-" + p.id
		p.state = "done"
		end(p, "completed")
	}
	advance := func(ms int) { ft.ok("EMQ.DEBUG", "CLOCK", "ADVANCE", ms) }

	leaves := func(pred func(j *mJob) bool) []*mJob {
		var out []*mJob
		for _, j := range jobs {
			if len(j.kids) == 0 && pred(j) {
				out = append(out, j)
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].ref < out[b].ref })
		return out
	}
	counts := map[string]int{}
	steps := 400
	for step := 0; step < steps; step++ {
		what := ""
		switch r := rng.IntN(100); {
		case r < 60:
			j := claim(queues[rng.IntN(3)])
			if j == nil {
				what = "claim none"
				break
			}
			if len(j.kids) > 0 {
				what = "parent"
				finishParent(j)
				break
			}
			switch o := rng.IntN(100); {
			case o < 40:
				what = "complete"
				j.result = "r-" + j.id + "-" + strconv.Itoa(step)
				ft.ok("EMQ.COMPLETE", j.q, j.id, heldTok, "RESULT", j.result)
				leafEnd(j, "completed")
			case o < 60:
				what = "fail to the cap"
				if v := ft.ok("EMQ.FAIL", j.q, j.id, heldTok, 1, 0, "boom-"+j.id).([]any); v[0] != "dead" {
					t.Fatalf("fail: %v", v)
				}
				leafEnd(j, "dead")
			case o < 72:
				what = "fail and retry"
				ft.ok("EMQ.FAIL", j.q, j.id, heldTok, 1000, 0, "soft")
			case o < 87:
				what = "stall to death"
				advance(1500)
				v := ft.ok("EMQ.STALLED.CHECK", j.q, 1).([]any)
				if d := v[1].([]any); len(d) == 1 && d[0] == j.id {
					leafEnd(j, "dead")
				} else if r := v[0].([]any); len(r) != 1 || r[0] != j.id {
					t.Fatalf("sweep: %v", v)
				}
			default:
				what = "requeue"
				ft.ok("EMQ.REQUEUE", j.q, j.id, heldTok)
			}
		case r < 72:
			c := leaves(func(j *mJob) bool { return !j.ended || j.outcome == "dead" })
			if len(c) == 0 {
				break
			}
			j := c[rng.IntN(len(c))]
			what = "remove"
			if got := ft.ok("EMQ.REMOVE", j.q, j.id); got != int64(1) {
				t.Fatalf("remove %s: %v", j.ref, got)
			}
			if !j.ended {
				leafEnd(j, "removed")
			}
			j.ended, j.outcome = true, "gone"
		case r < 84:
			c := leaves(func(j *mJob) bool { return j.ended && j.outcome == "dead" })
			if len(c) == 0 {
				break
			}
			j := c[rng.IntN(len(c))]
			what = "reprocess"
			_, err := ft.do("EMQ.REPROCESS", j.q, j.id)
			p := j.up
			switch {
			case p.state == "dead":
				want := "EMQFLOW parent " + p.ref + " is dead: reprocess or remove it first"
				if err == nil || err.Error() != want {
					t.Fatalf("reprocess %s under a dead parent: %v", j.ref, err)
				}
				counts["refused reprocess"]++
			case err != nil:
				t.Fatalf("reprocess %s: %v", j.ref, err)
			default:
				j.ended, j.outcome = false, ""
				if p.state == "waiting" && p.entries[j.ref] == "dead" {
					p.entries[j.ref] = "pending"
					p.left++
				}
			}
		case r < 88:
			i := rng.IntN(len(roots))
			if rootJobs[i].state != "done" {
				what = "repeat flow"
				if got := ft.ok(roots[i]...); got != int64(len(jobsOf(rootJobs[i]))) {
					t.Fatalf("repeated flow %d: %v", i, got)
				}
			}
		default:
			what = "restart"
			binary := rng.IntN(4) == 0 || (step > steps/2 && ft.kills == 0)
			ft.stop()
			ft.start(binary)
		}
		if what == "" {
			what = "nothing"
		}
		counts[what]++
		check(step, what)
	}
	// Drain: claim and complete everything left.
	for round := 0; ; round++ {
		if round > 10000 {
			t.Fatal("the drain does not end")
		}
		got := false
		for _, q := range queues {
			ft.ok("EMQ.PROMOTE.ALL", q)
			j := claim(q)
			if j == nil {
				continue
			}
			got = true
			if len(j.kids) > 0 {
				finishParent(j)
				continue
			}
			j.result = "r-" + j.id + "-drain"
			ft.ok("EMQ.COMPLETE", j.q, j.id, heldTok, "RESULT", j.result)
			leafEnd(j, "completed")
		}
		if !got {
			break
		}
	}
	check(steps, "drained")
	var released, dead int64
	for _, p := range parents {
		switch p.state {
		case "done":
			if p.released != 1 || p.killed != 0 || p.claims != 1 {
				t.Fatalf("%s: released %d killed %d claims %d", p.ref, p.released, p.killed, p.claims)
			}
			released++
		case "dead":
			if p.killed != 1 || p.released != 0 || p.claims != 0 {
				t.Fatalf("%s: released %d killed %d claims %d", p.ref, p.released, p.killed, p.claims)
			}
			dead++
		default:
			t.Fatalf("%s ends %s", p.ref, p.state)
		}
		// As the policy says: under fail dead exactly when a child died.
		if wantDead := p.policy == "fail" && p.died; (p.state == "dead") != wantDead {
			t.Fatalf("%s (%s): state %s, a child died %v", p.ref, p.policy, p.state, p.died)
		}
	}
	ft.stop()
	ft.start(true)
	for _, q := range queues {
		ft.ok("EMQ.REMOVE.ALL", q, "dead", "LIMIT", 10000)
	}
	keys := ft.c.Keys(context.Background(), "*").Val()
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasSuffix(k, ":metrics:completed") && !strings.HasSuffix(k, ":metrics:failed") {
			t.Fatalf("key %s is left (all keys: %v)", k, keys)
		}
	}
	ft.stop()
	if ft.released != released || ft.dead != dead {
		t.Fatalf("INFO over %d processes: %d released, %d dead; the model %d, %d", ft.restarts, ft.released, ft.dead, released, dead)
	}
	if ft.kills < 2 {
		t.Fatalf("only %d SIGKILLs", ft.kills)
	}
	t.Logf("seed %d: %d jobs, %d parents (%d released, %d dead), %d restarts (%d SIGKILL); steps %v",
		seed, len(jobs), len(parents), released, dead, ft.restarts, ft.kills, counts)
}

// jobsOf is the number of jobs in the tree under root (root included).
func jobsOf(root *mJob) []*mJob {
	out := []*mJob{root}
	for _, c := range root.kids {
		out = append(out, jobsOf(c)...)
	}
	return out
}
