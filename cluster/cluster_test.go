package cluster_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/emqd/emqd/cluster"
	"github.com/emqd/emqd/cluster/clustertest"
	"github.com/emqd/emqd/cluster/conformance"
	"github.com/emqd/emqd/internal/verbs"
	"github.com/redis/go-redis/v9"
)

// Every EMQ.* verb of the verb table has its function, named as
// docs/cluster.md says, and the library registers nothing else; the
// server's verbs are the table's.
func TestOneFunctionPerVerb(t *testing.T) {
	var want []string
	for _, c := range verbs.New(verbs.Config{}).Commands() {
		want = append(want, cluster.Function(c.Name))
	}
	sort.Strings(want)
	got := append([]string(nil), cluster.Functions...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) || len(want) < 20 {
		t.Fatalf("functions %v, verbs %v", got, want)
	}
	registered := regexp.MustCompile(`(?m)^verb\('(emq_\w+)'|function_name = '(emq_\w+)'`).FindAllStringSubmatch(cluster.Source(), -1)
	var names []string
	for _, m := range registered {
		names = append(names, m[1]+m[2])
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("emq.lua registers %v, want %v", names, want)
	}
	if cluster.Function("EMQ.STALLED.CHECK") != "emq_stalled_check" {
		t.Fatal(cluster.Function("EMQ.STALLED.CHECK"))
	}
}

// Slot agrees with the server's CLUSTER KEYSLOT for the bare name and for
// the queue's keys.
func TestSlot(t *testing.T) {
	if cluster.Slot("123456789") != 0x31c3 { // CRC16/XMODEM's check value
		t.Fatalf("slot %d", cluster.Slot("123456789"))
	}
	n := clustertest.StartNode(t, clustertest.NodeOptions{Cluster: true})
	c := n.Client(2)
	for _, q := range []string{"q", "emails", "load-17", "a.b_c-D", strings.Repeat("z", 128)} {
		for _, key := range []string{q, "emq:{" + q + "}:pending", "emq:{" + q + "}:job:JOB00000000001"} {
			got, err := c.ClusterKeySlot(context.Background(), key).Result()
			if err != nil || int(got) != cluster.Slot(q) {
				t.Fatalf("CLUSTER KEYSLOT %s = %d %v, Slot(%q) = %d", key, got, err, q, cluster.Slot(q))
			}
		}
	}
}

// DebugClock changes exactly one line of the source.
func TestDebugClockSource(t *testing.T) {
	prod, dbg := strings.Split(cluster.Source(), "\n"), strings.Split(cluster.SourceWith(cluster.DebugClock()), "\n")
	if len(prod) != len(dbg) {
		t.Fatal("line counts differ")
	}
	var diff []string
	for i := range prod {
		if prod[i] != dbg[i] {
			diff = append(diff, prod[i]+" -> "+dbg[i])
		}
	}
	if !reflect.DeepEqual(diff, []string{"local DEBUG_CLOCK = false -> local DEBUG_CLOCK = true"}) {
		t.Fatalf("diff %v", diff)
	}
}

// The production library on a single node: it loads (twice: REPLACE), its
// clock is the node's TIME, and EMQ.DEBUG is refused as Valkey refuses
// DEBUG with enable-debug-command off.
func TestProductionLibrary(t *testing.T) {
	n := clustertest.StartLibraryNode(t, clustertest.NodeOptions{})
	c := n.Client(2)
	ctx := context.Background()
	if err := cluster.Load(ctx, c); err != nil {
		t.Fatalf("second load: %v", err)
	}
	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: cluster.LibraryName}).Result()
	if err != nil || len(libs) != 1 || len(libs[0].Functions) != len(cluster.Functions) {
		t.Fatalf("FUNCTION LIST: %v %v", libs, err)
	}
	flags := map[string][]string{}
	for _, f := range libs[0].Functions {
		flags[f.Name] = f.Flags
	}
	for name, want := range map[string][]string{
		"emq_enqueue": {}, "emq_enqueue_many": {}, "emq_progress": {}, "emq_claim": {"allow-oom"}, "emq_complete": {"allow-oom"},
		"emq_counts": {"no-writes"}, "emq_job": {"no-writes"}, "emq_list": {"no-writes"},
	} {
		if got := flags[name]; len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
			t.Errorf("%s flags %v, want %v", name, got, want)
		}
	}
	err = c.FCall(ctx, "emq_debug", nil, "CLOCK", "ADVANCE", 5).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR EMQ.DEBUG command not allowed.") {
		t.Fatalf("emq_debug: %v", err)
	}
	// As on emqd with debug off: HELP answers, an unknown subcommand is
	// named before the refusal (docs/verbs.md §4.19).
	if help, err := c.FCall(ctx, "emq_debug", nil, "HELP").StringSlice(); err != nil || len(help) != 6 || help[1] != "CLOCK ADVANCE <ms>" {
		t.Fatalf("emq_debug HELP: %q %v", help, err)
	}
	if err := c.FCall(ctx, "emq_debug", nil, "FOO").Err(); err == nil || err.Error() != "ERR unknown subcommand 'FOO'. Try EMQ.DEBUG HELP." {
		t.Fatalf("emq_debug FOO: %v", err)
	}
	before, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.FCall(ctx, "emq_enqueue", []string{"q"}, "*", "p").Text()
	if err != nil {
		t.Fatal(err)
	}
	n0, _ := verbs.DecodeID([]byte(id))
	if n0 < before.UnixMilli() || n0 > before.UnixMilli()+60_000 {
		t.Fatalf("minted %s (%d) from a clock near %d", id, n0, before.UnixMilli())
	}
	// The lease epoch is the node's run_id.
	v, err := c.FCall(ctx, "emq_claim", []string{"q"}, 1000).Slice()
	if err != nil || len(v) != 1 {
		t.Fatalf("claim %v %v", v, err)
	}
	if got := c.HGet(ctx, "emq:{q}:job:"+id, "lease_epoch").Val(); got != n.RunID() {
		t.Fatalf("lease_epoch %q, run_id %q", got, n.RunID())
	}
	// Keys outside the declared key's slot are never touched: FCALL with no
	// key, or two, is refused.
	if err := c.FCall(ctx, "emq_counts", nil).Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'emq.counts' command" {
		t.Fatalf("no key: %v", err)
	}
	if err := c.FCall(ctx, "emq_counts", []string{"q", "r"}).Err(); err == nil || err.Error() != "ERR emq functions take exactly one key, the queue name" {
		t.Fatalf("two keys: %v", err)
	}
	if err := c.FCall(ctx, "emq_job", nil, "q", "x").Err(); err == nil || err.Error() != "ERR emq functions take exactly one key, the queue name" {
		t.Fatalf("queue not declared: %v", err)
	}
}

// The differences the suite asserts are documented, each under its topic.
func TestDifferencesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range conformance.Differences {
		if !strings.Contains(string(doc), "**"+d.Topic+"**") {
			t.Errorf("docs/cluster.md does not list the difference %q", d.Topic)
		}
	}
}

// A failover is a new process for the leases: a replica promoted to
// primary has its own run_id, so the leases its old primary granted (they
// reached it by replication, stamped with the primary's run_id) are
// recovered uncounted by emq_stalled_check, even with max_stalled 1
// (docs/cluster.md §2). The promoted node's own leases are counted.
func TestFailoverExemptsOldLeases(t *testing.T) {
	ctx := context.Background()
	primary := clustertest.StartLibraryNode(t, clustertest.NodeOptions{Extra: []string{"--repl-diskless-sync-delay", "0"}})
	replica := clustertest.StartNode(t, clustertest.NodeOptions{Extra: []string{"--replicaof", "127.0.0.1", fmt.Sprint(primary.Port)}})
	p, r := primary.Client(2), replica.Client(2)
	for _, id := range []string{"JOB00000000001", "JOB00000000002"} {
		if err := p.FCall(ctx, "emq_enqueue", []string{"q"}, id, "p").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := p.FCall(ctx, "emq_claim", []string{"q"}, 100).Slice(); err != nil || len(v) != 1 {
		t.Fatalf("claim %v %v", v, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if n, err := p.Do(ctx, "WAIT", 1, 1000).Int(); err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never acknowledged the writes")
		}
	}
	if err := r.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	primary.Kill()
	if got := r.HGet(ctx, "emq:{q}:job:JOB00000000001", "lease_epoch").Val(); got == "" || got == replica.RunID() {
		t.Fatalf("the replicated lease's epoch %q (the promoted node is %s)", got, replica.RunID())
	}
	// The promoted node claims the second job itself.
	if v, err := r.FCall(ctx, "emq_claim", []string{"q"}, 100).Slice(); err != nil || len(v) != 1 {
		t.Fatalf("claim on the promoted node: %v %v", v, err)
	}
	recovered, dead := []any{}, []any{}
	for len(recovered)+len(dead) < 2 {
		v, err := r.FCall(ctx, "emq_stalled_check", []string{"q"}, 1).Slice()
		if err != nil {
			t.Fatal(err)
		}
		recovered, dead = append(recovered, v[0].([]any)...), append(dead, v[1].([]any)...)
		if time.Now().After(deadline) {
			t.Fatalf("the leases never expired: %v %v", recovered, dead)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !reflect.DeepEqual(recovered, []any{"JOB00000000001"}) || !reflect.DeepEqual(dead, []any{"JOB00000000002"}) {
		t.Fatalf("after the failover: recovered %v, dead %v; want the old lease recovered, the new one counted", recovered, dead)
	}
	if row := r.HGetAll(ctx, "emq:{q}:job:JOB00000000001").Val(); row["state"] != "pending" || row["stalled"] != "" {
		t.Fatalf("exempt row %v", row)
	}
}
