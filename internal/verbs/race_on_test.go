//go:build race

package verbs

// raceEnabled: built with -race (allocs_test.go).
const raceEnabled = true
