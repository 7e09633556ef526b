package cmdmeta

import (
	"fmt"
	"strings"
	"testing"
)

// TestDerive checks the derived flags, categories and legacy key range of
// entries whose COMMAND INFO Valkey 8.0.1 gives (valkey-cli COMMAND INFO).
func TestDerive(t *testing.T) {
	for name, want := range map[string]string{
		"get":          "readonly,fast @read,@string,@fast 1 1 1",
		"zunionstore":  "write,denyoom,movablekeys @write,@sortedset,@slow 1 1 1",
		"mset":         "write,denyoom @write,@string,@slow 1 -1 2",
		"del":          "write @keyspace,@write,@slow 1 -1 1",
		"zunion":       "readonly,movablekeys @read,@sortedset,@slow 0 0 0",
		"ping":         "fast @fast,@connection 0 0 0",
		"rename":       "write @keyspace,@write,@slow 1 2 1",
		"emq.claim":    "write,blocking @write,@slow,@blocking,@emq 1 1 1",
		"emq.debug":    "admin,noscript,loading,stale @admin,@slow,@dangerous 0 0 0",
		"memory|usage": "readonly @read,@slow 2 2 1",
	} {
		c := Lookup(strings.ToUpper(name))
		if c == nil {
			t.Errorf("%s: no entry", name)
			continue
		}
		in := c.Derive()
		got := fmt.Sprintf("%s %s %d %d %d", strings.Join(in.Flags.ReplyNames(), ","),
			strings.Join(in.ACLCategories.ReplyNames(), ","), in.FirstKey, in.LastKey, in.Step)
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if Lookup("nosuch") != nil || CategoryByName("nosuch") != 0 || CategoryByName("SortedSet") != CatSortedSet {
		t.Error("lookups of unknown names")
	}
	if n := len(ValkeyNames()); n != 399 {
		t.Errorf("%d Valkey entries, want the 399 of 8.0.1's commands/*.json", n)
	}
}
