// Package clustertest starts real redis-server processes for tests: a
// single node or a Redis Cluster of n primaries on free loopback ports,
// with the emq FUNCTION library loaded, and kills and restarts them.
//
// The binaries come from PATH (Debian: redis-server, redis-tools). When one
// is missing the test is skipped, or fails when EMQD_REQUIRE_REFERENCE=1
// (CI sets it).
package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// TB is the part of testing.TB this package uses.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
	Logf(format string, args ...any)
}

// Require returns the path of the binary name (redis-server, redis-cli),
// skipping the test when it is missing, or failing it when
// EMQD_REQUIRE_REFERENCE=1.
func Require(t TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := name + " not found in PATH: install the Debian packages redis-server and redis-tools to run the tests against Redis 7"
	testsupport.Missing(t, msg)
	return ""
}

// freePort returns a loopback port that was free a moment ago, with
// port+10000 (the cluster bus port) free too.
func freePort() (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair")
}

// Node is one redis-server process with its own directory (AOF, nodes.conf)
// on a fixed port, so it can be killed and started again with its data.
type Node struct {
	Addr string
	Port int
	Dir  string

	t    TB
	bin  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuf
}

// syncBuf is the process's output, safe to read while it is written.
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

// NodeOptions configure StartNode.
type NodeOptions struct {
	// Cluster starts the node with cluster-enabled yes.
	Cluster bool
	// Extra are more redis-server arguments ("--name", "value", ...).
	Extra []string
}

// StartNode starts a redis-server on a free loopback port with the AOF on
// (appendfsync always, so an answered write survives SIGKILL) and no RDB
// snapshots, in a temporary directory; it is killed when the test ends.
func StartNode(t TB, o NodeOptions) *Node {
	t.Helper()
	bin := Require(t, "redis-server")
	port, err := freePort()
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	dir := t.TempDir()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no",
		"--loglevel", "warning", "--protected-mode", "no"}
	if o.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no")
	}
	args = append(args, o.Extra...)
	n := &Node{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, Dir: dir, t: t, bin: bin, args: args}
	t.Cleanup(n.Kill)
	n.Start()
	return n
}

// Start starts the node's process (again, after Kill) and waits until it
// answers PING with its data loaded.
func (n *Node) Start() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.t.Fatalf("clustertest: %s is running", n.Addr)
	}
	cmd := exec.Command(n.bin, n.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	testsupport.DieWithParent(cmd)
	n.log = new(syncBuf)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("clustertest: start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := ping(n.Addr); err == nil {
			return
		}
		select {
		case <-done:
			n.cmd = nil
			n.t.Fatalf("clustertest: redis-server %s exited: %s", n.Addr, n.log.String())
		default:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("clustertest: redis-server %s did not answer: %s", n.Addr, n.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill sends SIGKILL to the node and waits for it to exit (no-op when it is
// not running).
func (n *Node) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.done
	n.cmd = nil
}

// Restart kills the node with SIGKILL and starts it again: same port, same
// data (the AOF), a new run_id.
func (n *Node) Restart() {
	n.t.Helper()
	n.Kill()
	n.Start()
}

// Stop shuts the node down cleanly (SIGTERM: the AOF is flushed and
// fsynced) and waits for it to exit, SIGKILL after 10 s.
func (n *Node) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
	n.cmd = nil
}

// Client is a new RESP2/RESP3 client of the node, closed when the test
// ends.
func (n *Node) Client(proto int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: proto, MaxRetries: -1,
		ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	n.t.Cleanup(func() { c.Close() })
	return c
}

// RunID is the node's run_id (INFO server).
func (n *Node) RunID() string {
	n.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2,
		ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		n.t.Fatalf("clustertest: INFO server on %s: %v", n.Addr, err)
	}
	return InfoField(info, "run_id")
}

// InfoField is one field of an INFO reply ("" when absent).
func InfoField(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return ""
}

// ping sends an inline PING and wants +PONG (not -LOADING).
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	b := make([]byte, 64)
	m, err := c.Read(b)
	if err != nil {
		return err
	}
	if string(b[:m]) != "+PONG\r\n" {
		return fmt.Errorf("PING: %q", b[:m])
	}
	return nil
}

// StartLibraryNode starts a single redis-server node (o as for StartNode)
// with the emq library loaded (opts as for cluster.Load).
func StartLibraryNode(t TB, o NodeOptions, opts ...cluster.Option) *Node {
	t.Helper()
	n := StartNode(t, o)
	c := n.Client(2)
	if err := cluster.Load(context.Background(), c, opts...); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	return n
}

// Cluster is a Redis Cluster of primaries without replicas.
type Cluster struct {
	Nodes []*Node
	t     TB
}

// Addrs are the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// StartCluster starts n primaries (cluster-enabled, cluster-node-timeout
// 1000 ms, cluster-require-full-coverage no, so the slots of the other
// primaries keep serving while one is down), joins them with `redis-cli
// --cluster create ... --cluster-yes` (the 16384 slots split evenly), waits
// for cluster_state:ok on every node, and loads the library (opts as for
// cluster.Load) on every primary.
func StartCluster(t TB, n int, opts ...cluster.Option) *Cluster {
	t.Helper()
	cli := Require(t, "redis-cli")
	c := &Cluster{t: t}
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, StartNode(t, NodeOptions{Cluster: true}))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("clustertest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c.WaitOK()
	rdb := c.Client()
	if err := cluster.Load(context.Background(), rdb, opts...); err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	return c
}

// WaitOK waits until every node reports cluster_state:ok and knows all
// the others (up to 30 s).
func (c *Cluster) WaitOK() {
	c.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2,
			ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && InfoField(info, "cluster_state") == "ok" &&
				InfoField(info, "cluster_known_nodes") == strconv.Itoa(len(c.Nodes)) &&
				InfoField(info, "cluster_slots_ok") == "16384" {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				c.t.Fatalf("clustertest: %s never reached cluster_state:ok: %v %q", n.Addr, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cl.Close()
	}
}

// Client is a new go-redis cluster client over the nodes (RESP2), closed
// when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Protocol: 2,
		ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	c.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// NodeOf is the node that serves key's slot.
func (c *Cluster) NodeOf(key string) *Node {
	c.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr, Protocol: 2,
		ReadTimeout: testsupport.ClientTimeout, WriteTimeout: testsupport.ClientTimeout})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		c.t.Fatalf("clustertest: CLUSTER KEYSLOT: %v", err)
	}
	slots, err := rdb.ClusterSlots(context.Background()).Result()
	if err != nil {
		c.t.Fatalf("clustertest: CLUSTER SLOTS: %v", err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			for _, n := range c.Nodes {
				if n.Addr == s.Nodes[0].Addr {
					return n
				}
			}
		}
	}
	c.t.Fatalf("clustertest: no node serves slot %d", slot)
	return nil
}

// LogTail is the last lines the node wrote (for failure messages).
func (n *Node) LogTail() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log == nil {
		return ""
	}
	s := n.log.String()
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}
