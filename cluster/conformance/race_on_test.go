//go:build race

package conformance_test

// raceEnabled: the race detector slows the differential run about fivefold,
// so it runs fewer states (the class coverage check still holds).
const raceEnabled = true
