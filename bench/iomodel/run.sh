#!/usr/bin/env bash
# Server CPU per round trip under each I/O model: redis-benchmark PING_INLINE
# with one request per round trip (-P 1) against a goroutine-per-connection
# PONG server, a gnet event-loop PONG server, emqd and redis-server, each
# pinned to CPU 0 with the client on CPU 1, rounds alternating. Prints
# requests/s and the server's CPU time per request (utime+stime of
# /proc/PID/stat over the run), medians over the rounds.
#
# Run from the repository root:  bench/iomodel/run.sh
# Knobs: ROUNDS (3), REQUESTS (300000), CLIENTS (32), PIPELINE (1).
set -euo pipefail
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-300000}
CLIENTS=${CLIENTS:-32}
PIPELINE=${PIPELINE:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/bench/bin
mkdir -p "$bin"
(cd "$root/bench/iomodel" && go build -o "$bin/iomodel" .)
(cd "$root" && go build -o "$bin/emqd" ./cmd/emqd)
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

port=7300
declare -A addr
start() { # name cmd...
	local name=$1; shift
	port=$((port + 1))
	taskset -c 0 "$@" --port "$port" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
	addr[$name]=$port
	eval "pid_$name=$!"
}
startio() { # name model
	port=$((port + 1))
	taskset -c 0 "$bin/iomodel" --model "$2" --addr "127.0.0.1:$port" >"$tmp/$1.log" 2>&1 &
	pids+=($!)
	addr[$1]=$port
	eval "pid_$1=$!"
}
startio goroutine goroutine
startio gnet gnet
start emqd "$bin/emqd" --dir "$tmp" --appendonly no --save ""
start redis redis-server --dir "$tmp" --appendonly no --save ""
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
sides=(goroutine gnet emqd redis)
for r in $(seq "$ROUNDS"); do
	for s in "${sides[@]}"; do
		pid_var=pid_$s
		pid=${!pid_var}
		t0=$(ticks "$pid")
		rps=$(taskset -c 1 redis-benchmark -p "${addr[$s]}" -t ping_inline -P "$PIPELINE" -c "$CLIENTS" -n "$REQUESTS" --csv | awk -F'"' 'NR==2{print $4}')
		t1=$(ticks "$pid")
		us=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$REQUESTS" 'BEGIN{printf "%.2f", t / hz * 1e6 / n}')
		echo "$s $rps $us" >>"$tmp/results"
		echo "round $r $s: $rps requests/s, $us us of server CPU per request" >&2
	done
done
echo "median of $ROUNDS rounds, -P $PIPELINE -c $CLIENTS -n $REQUESTS, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %14s %22s\n' side "requests/s" "server CPU us/request"
for s in "${sides[@]}"; do
	med() { grep "^$s " "$tmp/results" | awk -v f="$1" '{print $f}' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
	printf '%-10s %14s %22s\n' "$s" "$(med 2)" "$(med 3)"
done
