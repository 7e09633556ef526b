#!/usr/bin/env bash
# bench/aof.sh: what durability costs (docs/durability.md §2.3), in one run.
#
# 1. Job-cycle throughput (bench/cmd/jobcycle --only cycle: enqueue, claim,
#    complete; and the variant with one failure; one command per round trip
#    and pipelined) with appendonly no, then appendfsync everysec, then
#    always: emqd (native verbs) beside redis-server (the Lua scripts) with
#    the same persistence setting, each writing its AOF in a fresh directory.
# 2. Boot time to replay an AOF of BOOT_JOBS jobs (bench/cmd/aofboot): emqd,
#    then redis-server (appendonly yes) loading the very same file; also the
#    BGREWRITEAOF time and the longest PING during it, and both boots on
#    the rewritten file.
#
# Knobs: JOBS (jobs per throughput cell, default 100000), BOOT_JOBS (default
# 1000000), BOOT_RUNS (boots per cell, median; default 3), MODES (default
# "no everysec always"), SKIP_BOOT=1, AOF_DIR (where the servers write;
# default a temporary directory: put it on the disk you want to measure).
# Quick run: JOBS=2000 BOOT_JOBS=20000 BOOT_RUNS=1 bench/aof.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

JOBS=${JOBS:-100000}
BOOT_JOBS=${BOOT_JOBS:-1000000}
BOOT_RUNS=${BOOT_RUNS:-3}
MODES=${MODES:-"no everysec always"}
REDIS=${REDIS:-redis-server}

mkdir -p bench/bin
go build -o bench/bin/emqd ./cmd/emqd
go build -o bench/bin/jobcycle ./bench/cmd/jobcycle
go build -o bench/bin/aofboot ./bench/cmd/aofboot

work=${AOF_DIR:-$(mktemp -d /tmp/emqd-aofbench-XXXXXX)}
mkdir -p "$work"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${AOF_DIR:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
waitping() {
	for _ in $(seq 1 500); do
		[ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
		sleep 0.02
	done
	echo "server on port $1 did not answer PING" >&2
	return 1
}

echo "== job-cycle throughput by persistence setting ($JOBS jobs per cell; files in $work)"
for mode in $MODES; do
	ep=$(freeport)
	rp=$(freeport)
	mkdir -p "$work/emqd-$mode" "$work/redis-$mode"
	if [ "$mode" = no ]; then
		eargs=(--appendonly no)
		rargs=(--appendonly no)
		label="appendonly no"
	else
		eargs=(--appendonly yes --appendfsync "$mode")
		rargs=(--appendonly yes --appendfsync "$mode")
		label="appendonly yes, appendfsync $mode"
	fi
	bench/bin/emqd --port "$ep" --dir "$work/emqd-$mode" --loglevel warning "${eargs[@]}" >"$work/emqd-$mode.log" 2>&1 &
	pids+=($!)
	"$REDIS" --port "$rp" --bind 127.0.0.1 --dir "$work/redis-$mode" --save "" --daemonize no --loglevel warning \
		"${rargs[@]}" >"$work/redis-$mode.log" 2>&1 &
	pids+=($!)
	waitping "$ep"
	waitping "$rp"
	echo
	echo "-- $label"
	bench/bin/jobcycle --emqd-addr "127.0.0.1:$ep" --redis-addr "127.0.0.1:$rp" --only cycle --jobs "$JOBS" | sed -n '/^cycle/,$p'
	redis-cli -p "$ep" shutdown >/dev/null 2>&1 || true
	redis-cli -p "$rp" shutdown nosave >/dev/null 2>&1 || true
	wait "${pids[@]}" 2>/dev/null || true
	pids=()
done

if [ "${SKIP_BOOT:-}" != 1 ]; then
	echo
	echo "== boot time, replaying an AOF of $BOOT_JOBS jobs"
	bench/bin/aofboot --jobs "$BOOT_JOBS" --runs "$BOOT_RUNS" --emqd-bin bench/bin/emqd --redis-bin "$REDIS"
fi
