package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/redis/go-redis/v9"
)

// ClusterConfig runs the checker against a Valkey or Redis Cluster with the
// emq FUNCTION library (cluster/emq.lua, docs/cluster.md) instead of emqd:
// three primaries with one replica each on loopback ports, every node with
// the AOF on (Config.Fsync), cluster-node-timeout NodeTimeout. The queue
// lives in one slot, so one shard (a primary and its replica) serves the
// whole history; the faults act on that shard's primary (docs/cluster.md
// §8).
type ClusterConfig struct {
	Server string // valkey-server or redis-server (7.0 or later)
	CLI    string // valkey-cli or redis-cli, for `--cluster create`
	// Wait sends `WAIT 1 WaitTimeout` after every call on the same
	// connection (one pipeline): a reply counts as acknowledged only when
	// WAIT answers that the replica has it; otherwise the operation is
	// recorded as indeterminate. Without Wait, a function's reply is the
	// acknowledgement, as for a client that does not use WAIT.
	Wait        bool
	WaitTimeout time.Duration // default 1 s
	NodeTimeout time.Duration // cluster-node-timeout, default 1 s
	// Netns puts every node in a network namespace of its own behind a
	// router namespace (clusternet.go; root and iproute2), which the fault
	// "isolate" needs: the queue's primary cut off from every other node
	// while the clients still reach it.
	Netns bool
}

// cnode is one cluster node: a fixed port and directory (nodes.conf, the
// AOF), so it can be killed and started again as the same node.
type cnode struct {
	ns   string // its network namespace ("": the checker's)
	port int
	addr string
	dir  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
	runID  string
	log    *bytes.Buffer
}

// clusterRun is the cluster side of a run.
type clusterRun struct {
	cfg   ClusterConfig
	bin   string
	nodes []*cnode
	shard [2]*cnode // the nodes of the queue's slot: the primary at the start, its replica
	slot  int
	r     *run
	net   *clusterNet // nil: every node on loopback
}

// freePortPair returns a loopback port free a moment ago with port+10000
// (the cluster bus) free too.
func freePortPair() (int, error) {
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			bus.Close()
			return port, nil
		}
	}
	return 0, errors.New("check: no free port pair for a cluster node")
}

func (n *cnode) start(bin string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	cmd := exec.Command(bin, n.args...)
	if n.ns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", n.ns, bin}, n.args...)...) // ip execs the server: one process
	}
	cmd.Dir = n.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	n.log = new(bytes.Buffer)
	f, err := os.OpenFile(filepath.Join(n.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("check: start %s: %w", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	n.cmd, n.done, n.paused = cmd, done, false
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pingOK(n.addr) {
			break
		}
		select {
		case <-done:
			n.cmd = nil
			return fmt.Errorf("check: %s %s exited at start (log in %s)", bin, n.addr, n.dir)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("check: %s %s did not answer PING in 30 s", bin, n.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb := redis.NewClient(&redis.Options{Addr: n.addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		return err
	}
	n.runID = runID(info)
	return nil
}

func (n *cnode) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, sig)
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
}

// kill sends SIGKILL (after SIGCONT, should it be stopped) and waits for
// the exit.
func (n *cnode) kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.done
	n.cmd, n.paused = nil, false
}

func pingOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 64)
	m, err := c.Read(b)
	return err == nil && string(b[:m]) == "+PONG\r\n"
}

func (cr *clusterRun) client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
}

// startCluster starts the six nodes, joins them with `--cluster create
// ... --cluster-replicas 1`, loads the library on every primary and finds
// the shard of the queue's slot.
func (cr *clusterRun) startCluster(dir, fsync string) error {
	if cr.cfg.NodeTimeout == 0 {
		cr.cfg.NodeTimeout = time.Second
	}
	if cr.cfg.WaitTimeout == 0 {
		cr.cfg.WaitTimeout = time.Second
	}
	cr.slot = cluster.Slot(queue)
	if cr.cfg.Netns {
		cn, err := newClusterNet(6)
		if err != nil {
			return err
		}
		cr.net = cn
	}
	var addrs []string
	for i := 0; i < 6; i++ {
		d := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		var n *cnode
		if cr.net != nil {
			// Its own namespace: the same port for every node.
			n = &cnode{ns: cr.net.nodes[i], port: 7000, addr: cr.net.ip(i) + ":7000", dir: d}
		} else {
			port, err := freePortPair()
			if err != nil {
				return err
			}
			n = &cnode{port: port, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: d}
		}
		host, _, _ := net.SplitHostPort(n.addr)
		n.args = []string{"--port", strconv.Itoa(n.port), "--bind", host, "--dir", d,
			"--save", "", "--appendonly", "yes", "--appendfsync", fsync, "--daemonize", "no",
			"--loglevel", "notice", "--protected-mode", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(cr.cfg.NodeTimeout.Milliseconds(), 10),
			"--cluster-require-full-coverage", "no"}
		if err := n.start(cr.bin); err != nil {
			return err
		}
		cr.nodes = append(cr.nodes, n)
		addrs = append(addrs, n.addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cr.cfg.CLI, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("check: %s %s: %v\n%s", cr.cfg.CLI, strings.Join(args, " "), err, out)
	}
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, rep, err := cr.slotNodes(cr.nodes[0].addr)
		if err == nil && rep != "" && cr.replicaUp(rep) && cr.allOK() {
			cr.shard = [2]*cnode{cr.byAddr(p), cr.byAddr(rep)}
			if cr.shard[0] != nil && cr.shard[1] != nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("check: the cluster did not settle in 60 s (slot %d: %v)", cr.slot, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: 2})
	defer cc.Close()
	if err := cluster.Load(ctx, cc); err != nil {
		return err
	}
	// The replica has the library before any fault can promote it.
	rc := cr.client(cr.shard[1].addr)
	defer rc.Close()
	for {
		libs, err := rc.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", cluster.LibraryName).Slice()
		if err == nil && len(libs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("check: the replica %s never received the library: %v", cr.shard[1].addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (cr *clusterRun) byAddr(addr string) *cnode {
	for _, n := range cr.nodes {
		if n.addr == addr {
			return n
		}
	}
	return nil
}

// allOK says whether every node reports cluster_state:ok and knows all six.
func (cr *clusterRun) allOK() bool {
	for _, n := range cr.nodes {
		c := cr.client(n.addr)
		info, err := c.ClusterInfo(context.Background()).Result()
		c.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:6") {
			return false
		}
	}
	return true
}

// slotNodes asks the node at addr which primary serves the queue's slot
// and which replica it lists first ("" when none).
func (cr *clusterRun) slotNodes(addr string) (primary, replica string, err error) {
	c := cr.client(addr)
	defer c.Close()
	slots, err := c.ClusterSlots(context.Background()).Result()
	if err != nil {
		return "", "", err
	}
	for _, s := range slots {
		if s.Start <= cr.slot && cr.slot <= s.End && len(s.Nodes) > 0 {
			if len(s.Nodes) > 1 {
				replica = s.Nodes[1].Addr
			}
			return s.Nodes[0].Addr, replica, nil
		}
	}
	return "", "", fmt.Errorf("slot %d not served", cr.slot)
}

// replicaUp says whether the node at addr is a replica whose link to its
// primary is up and not syncing.
func (cr *clusterRun) replicaUp(addr string) bool {
	c := cr.client(addr)
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") &&
		strings.Contains(info, "master_sync_in_progress:0")
}

// observers are the nodes outside the queue's shard: never faulted, they
// hold the majority's view of who serves the slot.
func (cr *clusterRun) observers() []*cnode {
	var out []*cnode
	for _, n := range cr.nodes {
		if n != cr.shard[0] && n != cr.shard[1] {
			out = append(out, n)
		}
	}
	return out
}

// route polls the observers every 50 ms and points the clients' dialer at
// the primary they name for the slot (a client already connected elsewhere
// learns it from a MOVED or a timeout).
func (cr *clusterRun) route(ctx context.Context) {
	for ctx.Err() == nil {
		for _, o := range cr.observers() {
			p, _, err := cr.slotNodes(o.addr)
			if err == nil && p != "" {
				if old, _ := cr.r.addr.Load().(string); old != p {
					cr.r.addr.Store(p)
					cr.r.logf("%.1fs slot %d now served by %s", time.Since(cr.r.start).Seconds(), cr.slot, p)
				}
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// primary is the shard node the observers name now (nil: neither).
func (cr *clusterRun) primary() *cnode {
	a, _ := cr.r.addr.Load().(string)
	for _, n := range cr.shard {
		if n.addr == a {
			return n
		}
	}
	return nil
}

func (cr *clusterRun) other(n *cnode) *cnode {
	if cr.shard[0] == n {
		return cr.shard[1]
	}
	return cr.shard[0]
}

// waitPrimary waits until the observers name n as the slot's primary.
func (cr *clusterRun) waitPrimary(n *cnode, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for cr.primary() != n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// waitReplica waits until n is a replica in sync with its primary.
func (cr *clusterRun) waitReplica(n *cnode, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !cr.replicaUp(n.addr) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// fcall turns `EMQ.X q args...` into `FCALL emq_x 1 q args...`
// (docs/cluster.md §1.2).
func fcall(args []any) []any {
	out := make([]any, 0, len(args)+2)
	out = append(out, "FCALL", cluster.Function(args[0].(string)), 1)
	return append(out, args[1:]...)
}

// redirect says whether a refusal is the cluster's "not here, not now"
// (the function did not run): the client drops its connection and dials
// the slot's primary again.
func redirect(msg string) bool {
	for _, p := range []string{"MOVED ", "ASK ", "READONLY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "LOADING", "UNBLOCKED"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// stopAll ends every node (SIGCONT first, then SIGTERM, SIGKILL after 5 s)
// and deletes the namespaces.
func (cr *clusterRun) stopAll() {
	if cr.net != nil {
		defer cr.net.close()
	}
	for _, n := range cr.nodes {
		n.mu.Lock()
		if n.cmd != nil {
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGCONT)
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-n.done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
				<-n.done
			}
			n.cmd = nil
		}
		n.mu.Unlock()
	}
}

// clusterFault injects one fault on the shard's current primary and waits
// until the shard has a primary and an in-sync replica again.
func (r *run) clusterFault(ctx context.Context, kind string, id int) {
	cr := r.cl
	startNs := r.now() // At of the fault; End when it is over (the shard settled)
	p := cr.primary()
	if p == nil {
		r.faultFrom(kind, "skipped: no primary named for the slot", startNs)
		return
	}
	q := cr.other(p)
	settle := func(note string) {
		if !cr.waitPrimary(q, 20*time.Second) {
			r.faultFrom(kind, note+"; no failover within 20 s", startNs)
			return
		}
		promoted := time.Since(r.start)
		if !cr.waitReplica(p, 30*time.Second) {
			r.faultFrom(kind, note+"; the old primary did not resync as a replica within 30 s", startNs)
			return
		}
		r.faultFrom(kind, fmt.Sprintf("%s; %s promoted by %.1fs, %s a replica in sync by %.1fs", note, q.addr, promoted.Seconds(), p.addr, time.Since(r.start).Seconds()), startNs)
	}
	switch kind {
	case "kill":
		fc := r.newConn(id)
		fc.do(Op{Kind: Claim}, readGrants, "EMQ.CLAIM", queue, r.cfg.Lease.Milliseconds(), "COUNT", 1)
		fc.rdb.Close()
		at := time.Since(r.start)
		p.kill()
		if !cr.waitPrimary(q, 20*time.Second) {
			r.faultFrom("kill", fmt.Sprintf("SIGKILL %s at %.1fs; no failover within 20 s", p.addr, at.Seconds()), startNs)
			_ = p.start(cr.bin)
			return
		}
		promoted := time.Since(r.start)
		if err := p.start(cr.bin); err != nil {
			r.faultFrom("kill", "restart failed: "+err.Error(), startNs)
			return
		}
		r.procMu.Lock()
		r.epochs = append(r.epochs, p.runID)
		r.procMu.Unlock()
		if !cr.waitReplica(p, 30*time.Second) {
			r.faultFrom("kill", fmt.Sprintf("SIGKILL %s at %.1fs, %s promoted by %.1fs; the restarted node did not sync within 30 s", p.addr, at.Seconds(), q.addr, promoted.Seconds()), startNs)
			return
		}
		r.faultFrom("kill", fmt.Sprintf("SIGKILL %s at %.1fs, %s promoted by %.1fs, restarted as its replica in sync by %.1fs", p.addr, at.Seconds(), q.addr, promoted.Seconds(), time.Since(r.start).Seconds()), startNs)
	case "stale":
		// The worst case of asynchronous replication: the replica stops
		// (SIGSTOP) while the primary keeps acknowledging writes, the
		// primary dies (SIGKILL), the replica resumes and is promoted
		// without those writes.
		at := time.Since(r.start)
		q.signal(syscall.SIGSTOP)
		// Cut the replication link while the replica cannot reconnect:
		// what the primary had sent before is already in the replica's
		// socket buffer, what it acknowledges from now on never leaves it.
		pc := cr.client(p.addr)
		killed, err := pc.Do(context.Background(), "CLIENT", "KILL", "TYPE", "replica").Int64()
		pc.Close()
		time.Sleep(time.Second)
		p.kill()
		q.signal(syscall.SIGCONT)
		if !cr.waitPrimary(q, 30*time.Second) {
			r.faultFrom("stale", fmt.Sprintf("SIGSTOP replica %s at %.1fs, SIGKILL %s 1 s later; no failover within 30 s", q.addr, at.Seconds(), p.addr), startNs)
			_ = p.start(cr.bin)
			return
		}
		promoted := time.Since(r.start)
		if err := p.start(cr.bin); err != nil {
			r.faultFrom("stale", "restart failed: "+err.Error(), startNs)
			return
		}
		r.procMu.Lock()
		r.epochs = append(r.epochs, p.runID)
		r.procMu.Unlock()
		if !cr.waitReplica(p, 30*time.Second) {
			r.faultFrom("stale", fmt.Sprintf("SIGSTOP replica %s at %.1fs, SIGKILL %s 1 s later, %s promoted by %.1fs; the restarted node did not sync within 30 s", q.addr, at.Seconds(), p.addr, q.addr, promoted.Seconds()), startNs)
			return
		}
		r.faultFrom("stale", fmt.Sprintf("SIGSTOP replica %s at %.1fs, CLIENT KILL TYPE replica on the primary (%d %v), SIGKILL primary %s 1 s later, SIGCONT; %s promoted by %.1fs, the old primary restarted as its replica in sync by %.1fs", q.addr, at.Seconds(), killed, err, p.addr, q.addr, promoted.Seconds(), time.Since(r.start).Seconds()), startNs)
	case "isolate":
		// A partition with the primary on the minority side: every other
		// node (its replica too) loses it, the checker's clients do not.
		// It answers until it finds itself in the minority, the majority
		// fails it over, and it learns so once the partition heals.
		at := time.Since(r.start)
		if err := cr.net.isolate(strings.Split(p.addr, ":")[0]); err != nil {
			r.faultFrom("isolate", "failed: "+err.Error(), startNs)
			return
		}
		hold := 2*r.cfg.Lease + 500*time.Millisecond
		ok := cr.waitPrimary(q, 20*time.Second)
		select {
		case <-ctx.Done():
		case <-time.After(max(0, hold-(time.Since(r.start)-at))):
		}
		if err := cr.net.heal(); err != nil {
			r.faultFrom("isolate", "heal failed: "+err.Error(), startNs)
			return
		}
		if !ok {
			r.faultFrom("isolate", fmt.Sprintf("%s cut off from the other nodes at %.1fs; no failover within 20 s", p.addr, at.Seconds()), startNs)
			return
		}
		settle(fmt.Sprintf("%s cut off from the other nodes (not from the clients) at %.1fs, healed at %.1fs", p.addr, at.Seconds(), time.Since(r.start).Seconds()))
	case "pause":
		at := time.Since(r.start)
		p.signal(syscall.SIGSTOP)
		hold := 2*r.cfg.Lease + 500*time.Millisecond
		ok := cr.waitPrimary(q, 20*time.Second)
		select {
		case <-ctx.Done():
		case <-time.After(max(0, hold-(time.Since(r.start)-at))):
		}
		p.signal(syscall.SIGCONT)
		if !ok {
			r.faultFrom("pause", fmt.Sprintf("SIGSTOP %s at %.1fs; no failover within 20 s", p.addr, at.Seconds()), startNs)
			return
		}
		settle(fmt.Sprintf("SIGSTOP %s at %.1fs, SIGCONT at %.1fs", p.addr, at.Seconds(), time.Since(r.start).Seconds()))
	}
}
