package check

import (
	"fmt"
	"os"
)

// clusterNet puts each cluster node in a network namespace of its own,
// all joined by a router namespace, so the fault "isolate" can cut one
// primary off from every other node (the cluster bus both ways and its
// replica's replication link) while the checker's clients, in the
// checker's namespace, still reach it: a primary on the minority side of a
// partition (docs/cluster.md §8). Needs root and iproute2.
//
// Addresses, k from the process id and a counter: the checker's link to
// the router 10.216.k.1 (host) - 10.216.k.2 (router); node j's link
// 10.217.k.(4j+1) (router) - 10.217.k.(4j+2) (node), its default route
// via the router. The router forwards between all of them; "isolate" adds
// two policy rules in the router (`ip rule ... blackhole`) that drop what
// the primary sends to the other nodes and what they send to it, and
// deleting them heals the partition.
type clusterNet struct {
	id     string
	k      int
	router string
	nodes  []string // namespace names
	rules  [][]string
}

func newClusterNet(n int) (*clusterNet, error) {
	if err := NetnsAvailable(); err != nil {
		return nil, err
	}
	k := (os.Getpid()*11 + int(netnsSeq.Add(1))) % 250
	id := fmt.Sprintf("%d%d", os.Getpid()%1000, k)
	cn := &clusterNet{id: id, k: k, router: "emqcr" + id}
	steps := [][]string{
		{"netns", "add", cn.router},
		{"netns", "exec", cn.router, "ip", "link", "set", "lo", "up"},
		{"netns", "exec", cn.router, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"}, // no sysctl binary needed
		{"link", "add", "ech" + id, "type", "veth", "peer", "name", "rh" + id},
		{"link", "set", "rh" + id, "netns", cn.router},
		{"addr", "add", fmt.Sprintf("10.216.%d.1/30", k), "dev", "ech" + id},
		{"link", "set", "ech" + id, "up"},
		{"netns", "exec", cn.router, "ip", "addr", "add", fmt.Sprintf("10.216.%d.2/30", k), "dev", "rh" + id},
		{"netns", "exec", cn.router, "ip", "link", "set", "rh" + id, "up"},
		{"route", "add", fmt.Sprintf("10.217.%d.0/24", k), "via", fmt.Sprintf("10.216.%d.2", k)},
	}
	for j := 0; j < n; j++ {
		ns := fmt.Sprintf("emqcn%s-%d", id, j)
		cn.nodes = append(cn.nodes, ns)
		rv, nv := fmt.Sprintf("r%d-%s", j, id), fmt.Sprintf("n%d-%s", j, id)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"netns", "exec", ns, "ip", "link", "set", "lo", "up"},
			[]string{"netns", "exec", cn.router, "ip", "link", "add", rv, "type", "veth", "peer", "name", nv},
			[]string{"netns", "exec", cn.router, "ip", "link", "set", nv, "netns", ns},
			[]string{"netns", "exec", cn.router, "ip", "addr", "add", fmt.Sprintf("10.217.%d.%d/30", k, 4*j+1), "dev", rv},
			[]string{"netns", "exec", cn.router, "ip", "link", "set", rv, "up"},
			[]string{"netns", "exec", ns, "ip", "addr", "add", fmt.Sprintf("10.217.%d.%d/30", k, 4*j+2), "dev", nv},
			[]string{"netns", "exec", ns, "ip", "link", "set", nv, "up"},
			[]string{"netns", "exec", ns, "ip", "route", "add", "default", "via", fmt.Sprintf("10.217.%d.%d", k, 4*j+1)})
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			cn.close()
			return nil, fmt.Errorf("check: cluster network namespaces: %w", err)
		}
	}
	return cn, nil
}

// ip is node j's address.
func (cn *clusterNet) ip(j int) string { return fmt.Sprintf("10.217.%d.%d", cn.k, 4*j+2) }

// isolate cuts the node at ip off from every other node (not from the
// checker); heal undoes it.
func (cn *clusterNet) isolate(ip string) error {
	all := fmt.Sprintf("10.217.%d.0/24", cn.k)
	cn.rules = [][]string{
		{"from", ip + "/32", "to", all, "blackhole", "priority", "100"},
		{"from", all, "to", ip + "/32", "blackhole", "priority", "101"},
	}
	for _, r := range cn.rules {
		if err := ipCmd(append([]string{"netns", "exec", cn.router, "ip", "rule", "add"}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

func (cn *clusterNet) heal() error {
	var first error
	for _, r := range cn.rules {
		if err := ipCmd(append([]string{"netns", "exec", cn.router, "ip", "rule", "del"}, r...)...); err != nil && first == nil {
			first = err
		}
	}
	cn.rules = nil
	return first
}

// close deletes the namespaces (their veths, and the checker's route
// through the router, go with them).
func (cn *clusterNet) close() {
	for _, ns := range cn.nodes {
		_ = ipCmd("netns", "del", ns)
	}
	_ = ipCmd("netns", "del", cn.router)
	_ = ipCmd("link", "del", "ech"+cn.id)
}
