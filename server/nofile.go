package server

import (
	"fmt"
	"strconv"
	"syscall"
)

// maxclients and the open-file limit (docs/operations.md §8), as Valkey's
// adjustOpenFilesLimit: each client costs a descriptor, and the server
// keeps reservedFDs more for itself (the append-only file, its rewrite's
// temporary file and directory fsync, logs, /proc reads) plus one per
// listener. At start, when RLIMIT_NOFILE is too low for maxclients, the soft
// limit is raised towards what is needed (up to the hard limit); what is
// still missing lowers maxclients, with Valkey's log lines; when not even
// one client fits, Start fails with Valkey's text. CONFIG SET maxclients
// refuses a value the limit cannot serve.

// reservedFDs is Valkey's CONFIG_MIN_RESERVED_FDS.
const reservedFDs = 32

// fitMaxclients adjusts maxclients to RLIMIT_NOFILE for listeners
// listeners (Start, before they open).
func (s *Server) fitMaxclients(listeners int) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil // unknown: nothing to fit
	}
	reserved := uint64(reservedFDs + listeners)
	want := uint64(s.maxClients.Load())
	need := want + reserved
	if rl.Cur >= need {
		return nil
	}
	orig := rl.Cur
	if rl.Max > rl.Cur {
		raised := rl
		raised.Cur = min(need, rl.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			s.log.Info(fmt.Sprintf("Increased maximum number of open files to %d (it was originally set to %d).", raised.Cur, orig))
			rl = raised
		} else {
			s.log.Warn(fmt.Sprintf("Server can't set maximum open files to %d because of OS error: %v.", raised.Cur, err))
		}
	}
	if rl.Cur >= need {
		return nil
	}
	if rl.Cur <= reserved {
		return fmt.Errorf("Your current 'ulimit -n' of %d is not enough for the server to start. Please increase your open file limit to at least %d. Exiting.",
			rl.Cur, reserved+1)
	}
	fit := int64(rl.Cur - reserved)
	s.log.Warn(fmt.Sprintf("You requested maxclients of %d requiring at least %d max file descriptors.", want, need))
	s.log.Warn(fmt.Sprintf("Current maximum open files is %d. maxclients has been reduced to %d to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.", rl.Cur, fit))
	s.cfg.set(s, "maxclients", strconv.FormatInt(fit, 10), true)
	return nil
}

// checkMaxclients is CONFIG SET maxclients' check: the open-file limit
// (raised up to the hard limit when it can be) must serve the new value.
func (s *Server) checkMaxclients(v string) error {
	n := atoi(v)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil
	}
	reserved := uint64(reservedFDs + s.listeners)
	need := uint64(n) + reserved
	if rl.Cur < need && rl.Max > rl.Cur {
		raised := rl
		raised.Cur = min(need, rl.Max)
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			rl = raised
		}
	}
	if rl.Cur < need {
		return fmt.Errorf("The operating system is not able to handle the specified number of clients, try with %d", int64(rl.Cur)-int64(reserved))
	}
	return nil
}
