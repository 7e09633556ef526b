//go:build !race

package server

// rawSyscalls: rawRead and rawWrite make raw system calls (rawio.go;
// rawio_race.go says why not under the race detector).
const rawSyscalls = true
