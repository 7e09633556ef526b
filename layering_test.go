package emqd_test

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/emqd/emqd"

// layers is the layering of docs/architecture.md ("Packages"), lowest
// first: a package may import only packages of a strictly lower layer
// (packages of one layer do not import each other). A package path ending
// in "/..." covers the folder and everything under it; the longest match
// wins.
var layers = map[string]int{
	"clock":        0, // the server clock (Wall, Manual, Shifted)
	"internal/num": 0, // Valkey's number rules: string2ll, string2d, d2string, long double

	"internal/testsupport": 0, // for tests and the bench drivers: the EMQD_REQUIRE_REFERENCE gate, the emqd binary (Launch), raw RESP, keyspace dump
	"internal/valkeyref":   1, // the Valkey 8.0.1 reference server for tests (EMQD_VALKEY_DIR)
	"internal/cmdmeta":     0, // command metadata: Valkey 8.0.1's generated table, emqd's own entries
	"internal/vfs":         0, // the file-system interface of the AOF and RDB files (aof.FS)

	"internal/cmdmeta/gencmd": 2, // writes internal/cmdmeta/valkey_gen.go from Valkey's commands/*.json
	"internal/verbgen":        1, // for tests: random calls of every verb (the property tests' generators)
	"internal/faultfs":        1, // for tests: the fault-injecting in-memory vfs.FS
	"internal/resp":           1, // RESP request reader and reply writer
	"emq":                     1, // Go client and worker library (imports no emqd package; the dashboard reads through it)
	"internal/plan":           1, // the write plan (primitive ops)
	"internal/store":          2, // keyspace, data types, Valkey commands, command specs

	"internal/store/aof": 3, // the append-only file
	"internal/store/rdb": 3, // the RDB format: dump.rdb, DUMP/RESTORE payloads
	"internal/verbs":     3, // the EMQ.* verbs
	"internal/dashboard": 3, // the web dashboard (a RESP client of the server; imports clock only)

	"server": 4, // listener, dispatch, registry, persistence wiring, embedding API

	"cmd/emqd": 5, // the binary: argv and config file -> server
	"cluster":  5, // FUNCTION library for Valkey/Redis Cluster

	"cluster/clustertest": 6, // redis-server nodes and clusters for tests
	"cluster/conformance": 7, // the verb scenarios, run against emqd and the library
	"cmd/emqd-migrate":    7, // copies queues from emqd to a cluster (its tests start one: clustertest)

	// Benchmarks and load drivers.
	"bench/internal/...": 6,
	"bench/lua":          6,
	"bench/load":         7,
	"bench/check":        7, // the history checker under faults (bench/README.md)
	"bench/...":          8, // bench/cmd/*
}

// only narrows what a package may import beyond the layer rule: the binary
// talks to the server (and names a clock), the client library stands alone.
var only = map[string][]string{
	"cmd/emqd": {"server", "clock", "internal/valkeyref", "internal/testsupport"}, // tests: the stock valkey.conf, the binary
	"emq":      {},
	// The dashboard reaches the data only over RESP, reading the EMQ replies
	// through emq (docs/architecture.md §6.1).
	"internal/dashboard": {"clock", "emq", "internal/testsupport"}, // emq: its reads of EMQ replies; testsupport: its browser tests' gate
}

// layerOf returns the layer of rel (a path relative to the module).
func layerOf(rel string) (int, bool) {
	if l, ok := layers[rel]; ok {
		return l, true
	}
	best, layer, found := -1, 0, false
	for p, l := range layers {
		dir, ok := strings.CutSuffix(p, "/...")
		if !ok || (rel != dir && !strings.HasPrefix(rel, dir+"/")) {
			continue
		}
		if len(dir) > best {
			best, layer, found = len(dir), l, true
		}
	}
	return layer, found
}

// TestLayering fails when a package imports one of its own layer or of a
// layer above it, or when a package is missing from the table. It reads
// the imports as go list does (go/build, build constraints applied) from
// every package folder of the module, the package's own _test.go files
// included; external test packages (package x_test) may drive the whole
// server and are not checked.
func TestLayering(t *testing.T) {
	var bad []string
	seen := 0
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if dir != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		rel := filepath.ToSlash(dir)
		if rel == "." {
			return nil // this test's own package
		}
		seen++
		layer, ok := layerOf(rel)
		if !ok {
			bad = append(bad, rel+": not in the layering table (add it here and to docs/architecture.md)")
			return nil
		}
		allowed, narrowed := only[rel]
		for _, imp := range append(p.Imports, p.TestImports...) {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if narrowed && !slices.Contains(allowed, dep) {
				bad = append(bad, rel+" imports "+dep+": it may import only "+strings.Join(allowed, ", ")+" of emqd")
				continue
			}
			dl, ok := layerOf(dep)
			if !ok {
				continue // reported as a package of its own
			}
			if dl >= layer {
				bad = append(bad, rel+" (layer "+strconv.Itoa(layer)+") imports "+dep+" (layer "+strconv.Itoa(dl)+")")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 8 {
		t.Fatalf("found %d packages; expected the whole module", seen)
	}
	slices.Sort(bad)
	bad = slices.Compact(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// TestLayerOf checks the table's lookup on the shapes it must handle.
func TestLayerOf(t *testing.T) {
	for rel, want := range map[string]int{"internal/store": 2, "internal/store/aof": 3, "bench/load": 7, "bench/cmd/jobcycle": 8, "bench/internal/procs": 6, "server": 4} {
		if got, ok := layerOf(rel); !ok || got != want {
			t.Errorf("layerOf(%q) = %d, %v; want %d", rel, got, ok, want)
		}
	}
	for _, rel := range []string{"internal/store/other", "store", "benchmark", "servers"} {
		if l, ok := layerOf(rel); ok {
			t.Errorf("layerOf(%q) = %d; want not found", rel, l)
		}
	}
}

// public is the module's user API (docs/architecture.md "Packages"): every
// other package lives under internal/ (or is a benchmark or a binary), so
// its types and fields are not API. A new top-level package fails here
// until it is either put under internal/ or added with its outside user.
var public = map[string]string{
	"clock":               "the clock an embedding test hands the server (clock.Manual)",
	"emq":                 "the Go client and worker library",
	"server":              "the embedding API (server.StartTest and its options)",
	"cluster":             "the FUNCTION library and its loader",
	"cluster/clustertest": "redis-server nodes and clusters for a user's own cluster tests",
	"cluster/conformance": "the verb scenarios a user can run against their own cluster",
}

// TestPublicPackages fails when a package outside internal/, bench/ and
// cmd/ is not one of the public ones above.
func TestPublicPackages(t *testing.T) {
	found := map[string]bool{}
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if dir != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel := filepath.ToSlash(dir)
		for _, top := range []string{"internal", "bench", "cmd"} {
			if rel == top || strings.HasPrefix(rel, top+"/") {
				return filepath.SkipDir
			}
		}
		if _, err := build.ImportDir(dir, 0); err != nil {
			var none *build.NoGoError
			if errors.As(err, &none) {
				return nil
			}
			return err
		}
		if rel == "." {
			return nil
		}
		found[rel] = true
		if _, ok := public[rel]; !ok {
			t.Errorf("%s is public (outside internal/) but not in the public table: move it under internal/ or name its outside user", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range public {
		if !found[rel] {
			t.Errorf("public package %s is gone: drop it from the table", rel)
		}
	}
}
