package aof

import (
	"strconv"
	"time"
)

// PersistenceInfo is INFO's "# Persistence" section as Valkey 8.0 prints it,
// field by field in order. a is nil when appendonly is no. dirty is the
// number of changes since boot and lastSave the boot time in Unix seconds;
// the server replaces the rdb_* values with its snapshot state
// (server/rdb.go).
func PersistenceInfo(a *AOF, dirty, lastSave int64) [][2]string {
	i := strconv.FormatInt
	out := [][2]string{
		{"loading", "0"},
		{"async_loading", "0"},
		{"current_cow_peak", "0"},
		{"current_cow_size", "0"},
		{"current_cow_size_age", "0"},
		{"current_fork_perc", "0.00"},
		{"current_save_keys_processed", "0"},
		{"current_save_keys_total", "0"},
		{"rdb_changes_since_last_save", i(dirty, 10)},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_last_save_time", i(lastSave, 10)},
		{"rdb_last_bgsave_status", "ok"},
		{"rdb_last_bgsave_time_sec", "-1"},
		{"rdb_current_bgsave_time_sec", "-1"},
		{"rdb_saves", "0"},
		{"rdb_last_cow_size", "0"},
		{"rdb_last_load_keys_expired", "0"},
		{"rdb_last_load_keys_loaded", "0"},
	}
	if a == nil {
		return append(out,
			[2]string{"aof_enabled", "0"},
			[2]string{"aof_rewrite_in_progress", "0"},
			[2]string{"aof_rewrite_scheduled", "0"},
			[2]string{"aof_last_rewrite_time_sec", "-1"},
			[2]string{"aof_current_rewrite_time_sec", "-1"},
			[2]string{"aof_last_bgrewrite_status", "ok"},
			[2]string{"aof_rewrites", "0"},
			[2]string{"aof_rewrites_consecutive_failures", "0"},
			[2]string{"aof_last_write_status", "ok"},
			[2]string{"aof_last_cow_size", "0"},
			[2]string{"module_fork_in_progress", "0"},
			[2]string{"module_fork_last_cow_size", "0"},
		)
	}
	return append(out, a.Info()...)
}

// Info is the AOF part of INFO persistence (from aof_enabled on), with
// Valkey's names and order: the status fields, then, as Valkey prints them
// only when the AOF is on, sizes and buffer state.
func (a *AOF) Info() [][2]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := strconv.FormatInt
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	okErr := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "err"
	}
	cur := int64(-1)
	if a.rewriting {
		cur = int64(time.Since(a.rwStart) / time.Second)
	}
	return [][2]string{
		{"aof_enabled", "1"},
		{"aof_rewrite_in_progress", b(a.rewriting)},
		{"aof_rewrite_scheduled", "0"},
		{"aof_last_rewrite_time_sec", i(a.lastRwSec, 10)},
		{"aof_current_rewrite_time_sec", i(cur, 10)},
		{"aof_last_bgrewrite_status", okErr(a.lastRwOK)},
		{"aof_rewrites", i(a.rewrites, 10)},
		{"aof_rewrites_consecutive_failures", i(a.rwFailures, 10)},
		{"aof_last_write_status", okErr(a.lastErr == nil)},
		{"aof_last_cow_size", "0"},
		{"module_fork_in_progress", "0"},
		{"module_fork_last_cow_size", "0"},
		{"aof_current_size", i(a.curSize, 10)},
		{"aof_base_size", i(a.baseSize, 10)},
		{"aof_pending_rewrite", "0"},
		{"aof_buffer_length", strconv.Itoa(len(a.buf))},
		{"aof_pending_bio_fsync", b(a.fsyncing)},
		{"aof_delayed_fsync", i(a.delayed, 10)},
	}
}

// Status is a summary for tests and the server.
type Status struct {
	RewriteInProgress bool
	LastRewriteOK     bool
	Rewrites          int64
	CurrentSize       int64
	BaseSize          int64
	// WriteOK is aof_last_write_status ok.
	WriteOK bool
}

// Status returns the current Status.
func (a *AOF) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Status{
		RewriteInProgress: a.rewriting,
		LastRewriteOK:     a.lastRwOK,
		Rewrites:          a.rewrites,
		CurrentSize:       a.curSize,
		BaseSize:          a.baseSize,
		WriteOK:           a.lastErr == nil,
	}
}
