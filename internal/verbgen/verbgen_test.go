package verbgen

import (
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/cmdmeta"
)

// TestGeneratorPerVerb: Generators has exactly one generator per top-level
// command of the verb table, and each draws calls of its own verb.
func TestGeneratorPerVerb(t *testing.T) {
	var want []string
	for _, c := range cmdmeta.Verbs() {
		if !strings.Contains(c.Name, "|") {
			want = append(want, c.Name)
		}
	}
	var got []string
	g := &Gen{Rand: rand.New(rand.NewSource(1)), IDs: []string{"JOB00000000001"}, MaxResult: 8, MintQueue: "q"}
	for _, v := range Generators {
		got = append(got, v.Name)
		for i := 0; i < 50; i++ {
			a := v.Call(g)
			if strings.ToLower(a[0]) != v.Name || len(a) < 2 {
				t.Fatalf("the generator of %s drew %q", v.Name, a)
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || len(want) < 20 {
		t.Fatalf("generators %v\nverb table %v", got, want)
	}
}

// TestRandomSkipsAndMints: Random never draws a skipped verb, draws every
// other one, and with MintQueue no minting call names another queue.
func TestRandomSkipsAndMints(t *testing.T) {
	g := &Gen{Rand: rand.New(rand.NewSource(2)), IDs: []string{"JOB00000000001"}, MintQueue: "q"}
	seen := map[string]int{}
	for i := 0; i < 20000; i++ {
		a := g.Random(map[string]string{"emq.wait": "test"})
		name := strings.ToLower(a[0])
		seen[name]++
		if name == "emq.wait" {
			t.Fatalf("drew skipped %q", a)
		}
		ids := a[2:]
		if j := slices.Index(a, "JOBS"); name == "emq.enqueue.many" && (j < 0 || (len(a)-j-1)%2 == 1) {
			ids = nil // a bad shape (no JOBS, a dangling id): refused, mints nothing
		}
		minting := name == "emq.schedule" || (strings.HasPrefix(name, "emq.enqueue") && slices.Contains(ids, "*"))
		if minting && a[1] == "other" {
			t.Fatalf("a minting call names another queue: %q", a)
		}
	}
	for _, v := range Generators {
		if v.Name != "emq.wait" && seen[v.Name] == 0 {
			t.Errorf("%s never drawn", v.Name)
		}
	}
}
