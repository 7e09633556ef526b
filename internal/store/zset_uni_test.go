package store

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// A big sorted set whose members all have one score keeps no member index
// (zset.go, docs/architecture.md §2.11): random operations, mostly at that
// score and now and then at another, answer as a model does (a map and a
// sort by score then member), the set passes checkZSet after every step,
// and it has an index exactly once a member with another score arrived.
func TestZSetOneScoreAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		z := NewZSet()
		model := map[string]float64{}
		const uni = 7.0
		mixed := false // a member with another score was ever added while big
		sorted := func() []ZItem {
			out := make([]ZItem, 0, len(model))
			for m, s := range model {
				out = append(out, ZItem{s, m})
			}
			slices.SortFunc(out, func(a, b ZItem) int {
				if zless(a, b) {
					return -1
				}
				if zless(b, a) {
					return 1
				}
				return 0
			})
			return out
		}
		member := func() string { return "m" + strconv.Itoa(rng.Intn(400)) }
		for step := 0; step < 1500; step++ {
			m := member()
			switch op := rng.Intn(100); {
			case op < 55:
				sc := uni
				if rng.Intn(300) == 0 {
					sc = float64(rng.Intn(5))
				}
				_, had := model[m]
				var added bool
				if rng.Intn(2) == 0 {
					added = z.Add(m, sc)
				} else {
					added = z.AddBytes([]byte(m), sc)
				}
				if added == had {
					t.Fatalf("seed %d step %d: Add(%s, %v) = %v, member before %v", seed, step, m, sc, added, had)
				}
				model[m] = sc
				if sc != uni && z.Big() {
					mixed = true
				}
			case op < 70:
				_, had := model[m]
				if got := z.Rem(m); got != had {
					t.Fatalf("seed %d step %d: Rem(%s) = %v", seed, step, m, got)
				}
				delete(model, m)
			case op < 80:
				want, had := model[m]
				got, ok := z.Score(m)
				if ok != had || (ok && got != want) {
					t.Fatalf("seed %d step %d: Score(%s) = %v %v, want %v %v", seed, step, m, got, ok, want, had)
				}
				rank, sc := z.RankBytes([]byte(m))
				want2 := -1
				if had {
					want2 = slices.Index(sorted(), ZItem{want, m})
				}
				if rank != want2 || (had && sc != want) || z.Rank(m) != want2 {
					t.Fatalf("seed %d step %d: rank of %s %d (%v), want %d", seed, step, m, rank, sc, want2)
				}
			case op < 85 && len(model) > 0:
				it, _ := z.PopMin()
				if want := sorted()[0]; it != want {
					t.Fatalf("seed %d step %d: PopMin %v, want %v", seed, step, it, want)
				}
				delete(model, it.Member)
			case op < 88 && len(model) > 0:
				it, _ := z.PopMax()
				if s := sorted(); it != s[len(s)-1] {
					t.Fatalf("seed %d step %d: PopMax %v, want %v", seed, step, it, s[len(s)-1])
				}
				delete(model, it.Member)
			case op < 90 && len(model) > 2:
				s := sorted()
				if n := z.DeleteRankRange(1, 3); n != 2 {
					t.Fatalf("seed %d step %d: DeleteRankRange removed %d", seed, step, n)
				}
				delete(model, s[1].Member)
				delete(model, s[2].Member)
			case op < 92:
				c := z.Copy()
				var got []ZItem
				c.AscendAll(func(it ZItem) bool { got = append(got, it); return true })
				if !slices.Equal(got, sorted()) {
					t.Fatalf("seed %d step %d: the copy holds %d members, want %d", seed, step, len(got), len(model))
				}
				if len(model) > 0 {
					if err := checkZSet(c); err != nil {
						t.Fatalf("seed %d step %d: copy: %v", seed, step, err)
					}
				}
			default:
				var names []string
				z.members(func(m string) { names = append(names, m) })
				slices.Sort(names)
				var want []string
				for m := range model {
					want = append(want, m)
				}
				slices.Sort(want)
				if !slices.Equal(names, want) {
					t.Fatalf("seed %d step %d: members %d, want %d", seed, step, len(names), len(want))
				}
			}
			if z.Len() != len(model) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, z.Len(), len(model))
			}
			if len(model) > 0 {
				if err := checkZSet(z); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			}
			if z.Big() && !mixed && z.dict != nil {
				// Only a listpack of mixed scores converting builds the
				// index without a mixed add while big.
				mixed = true
			}
			if z.Big() && mixed != (z.dict != nil) {
				t.Fatalf("seed %d step %d: index %v after a mixed score %v", seed, step, z.dict != nil, mixed)
			}
		}
	}
}

// A set of 1,000 members at one score holds no member index and finds a
// member in the tree; one member at another score builds the index, and
// every member keeps its score.
func TestZSetOneScoreIndexBuiltOnce(t *testing.T) {
	z := NewZSet()
	for i := 0; i < 1000; i++ {
		z.Add("job:"+strconv.Itoa(i), 0)
	}
	if !z.Big() || z.dict != nil {
		t.Fatalf("big %v, index %v", z.Big(), z.dict != nil)
	}
	if s, ok := z.Score("job:500"); !ok || s != 0 {
		t.Fatalf("Score %v %v", s, ok)
	}
	if _, ok := z.Score("job:1000"); ok {
		t.Fatal("a missing member found")
	}
	if z.Add("job:500", 0) {
		t.Fatal("a member added twice")
	}
	if z.Add("job:7", 3) {
		t.Fatal("a rescore reported as new")
	}
	if z.dict == nil || z.dict.len() != 1000 {
		t.Fatalf("index of %d after a second score", z.dict.len())
	}
	if s, _ := z.Score("job:7"); s != 3 {
		t.Fatalf("job:7 scored %v", s)
	}
	if it, _ := z.Max(); it.Member != "job:7" {
		t.Fatalf("max %v", it)
	}
	if err := checkZSet(z); err != nil {
		t.Fatal(err)
	}
}
