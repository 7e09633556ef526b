package check

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
)

// netns puts emqd in a network namespace of its own, reached from the
// checker's namespace over two veth pairs: path A for the producers, the
// sweeper and the second half of the workers, path B for the first half of
// the workers (the partitionable ones). The fault "partition" then takes
// path B's link down (`ip link set ... down`) and up again: the kernel
// holds or drops the partitioned workers' packets both ways while the
// others still reach the server, and TCP retransmits what was held once
// the link is back, as after a real partition. Needs root and iproute2.
type netns struct {
	name         string
	hostA, hostB string // the veth ends in the checker's namespace
	ipA, ipB     string // the server's addresses, one per path
}

var netnsSeq atomic.Int32

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NetnsAvailable says whether this process can create a network namespace
// with a veth pair (root, iproute2), and why not.
func NetnsAvailable() error {
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("check: ip (iproute2) not found: %w", err)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("check: network namespaces need root (euid %d)", os.Geteuid())
	}
	n, err := newNetns()
	if err != nil {
		return err
	}
	n.close()
	return nil
}

// newNetns creates the namespace and both paths: 10.213.k.1-2 (A) and
// 10.213.k.5-6 (B), k from the process id and a counter.
func newNetns() (*netns, error) {
	k := (os.Getpid()*7 + int(netnsSeq.Add(1))) % 250
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, k)
	n := &netns{name: "emqchk" + id, hostA: "eca" + id, hostB: "ecb" + id,
		ipA: fmt.Sprintf("10.213.%d.2", k), ipB: fmt.Sprintf("10.213.%d.6", k)}
	steps := [][]string{{"netns", "add", n.name}, {"netns", "exec", n.name, "ip", "link", "set", "lo", "up"}}
	for _, p := range []struct{ host, peer, hostIP, nsIP string }{
		{n.hostA, "nsa" + id, fmt.Sprintf("10.213.%d.1/30", k), n.ipA + "/30"},
		{n.hostB, "nsb" + id, fmt.Sprintf("10.213.%d.5/30", k), n.ipB + "/30"},
	} {
		steps = append(steps,
			[]string{"link", "add", p.host, "type", "veth", "peer", "name", p.peer},
			[]string{"link", "set", p.peer, "netns", n.name},
			[]string{"addr", "add", p.hostIP, "dev", p.host},
			[]string{"link", "set", p.host, "up"},
			[]string{"netns", "exec", n.name, "ip", "addr", "add", p.nsIP, "dev", p.peer},
			[]string{"netns", "exec", n.name, "ip", "link", "set", p.peer, "up"})
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			n.close()
			return nil, fmt.Errorf("check: network namespace: %w", err)
		}
	}
	return n, nil
}

// close deletes the namespace (its veth ends go with it, and so do their
// peers) and the host ends, should one be left.
func (n *netns) close() {
	_ = ipCmd("netns", "del", n.name)
	_ = ipCmd("link", "del", n.hostA)
	_ = ipCmd("link", "del", n.hostB)
}

// setB takes path B's link down or up.
func (n *netns) setB(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ipCmd("link", "set", n.hostB, state)
}
