#!/usr/bin/env bash
# redis-benchmark against emqd and redis-server, side by side, in one run.
#
# Builds emqd (bench/bin/emqd), starts it and redis-server on free loopback
# ports with persistence off on both, and runs redis-benchmark against each:
# PING_INLINE, HSET, ZADD, ZPOPMIN (-t) and the custom commands HGET, HINCRBY
# and ZRANGEBYSCORE key -inf +inf LIMIT 0 10 (on keys populated first), with
# -P 1 and -P 32. Prints requests/s for both and the ratio emqd/redis.
#
# Usage: bench/redis-benchmark.sh
# Environment (defaults in brackets):
#   CLIENTS [50]  REQUESTS [200000]  PIPELINES ["1 32"]
#   KEYSPACE [unset: no -r]   random keys for -t tests (redis-benchmark -r)
#   REDIS_SERVER [redis-server]  REDIS_BENCHMARK [redis-benchmark]  REDIS_CLI [redis-cli]
#   EMQD_ARGS [unset]  extra emqd directives, e.g. "--loglevel warning"
#   EMQD_BIN [unset]   a prebuilt emqd binary to use instead of building one
# Quick smoke run: CLIENTS=4 REQUESTS=2000 bench/redis-benchmark.sh
set -euo pipefail

CLIENTS=${CLIENTS:-50}
REQUESTS=${REQUESTS:-200000}
PIPELINES=${PIPELINES:-"1 32"}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_BENCHMARK=${REDIS_BENCHMARK:-redis-benchmark}
REDIS_CLI=${REDIS_CLI:-redis-cli}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
for b in "$REDIS_SERVER" "$REDIS_BENCHMARK" "$REDIS_CLI"; do
  command -v "$b" >/dev/null || { echo "missing $b (Debian packages redis-server, redis-tools)" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

emqd=${EMQD_BIN:-}
if [ -z "$emqd" ]; then
  echo "building emqd ..." >&2
  go build -o bench/bin/emqd ./cmd/emqd
  emqd=bench/bin/emqd
fi

# free_port prints a loopback port nothing listens on (checked by connecting).
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"; return
    fi
  done
}

# wait_ping PORT PID: until PING answers PONG (10 s), or the process died.
wait_ping() {
  for _ in $(seq 200); do
    if [ "$("$REDIS_CLI" -h 127.0.0.1 -p "$1" PING 2>/dev/null)" = PONG ]; then return 0; fi
    kill -0 "$2" 2>/dev/null || { echo "server on port $1 exited" >&2; return 1; }
    sleep 0.05
  done
  echo "no PONG on port $1" >&2; return 1
}

eport=$(free_port)
# shellcheck disable=SC2086
"$emqd" --port "$eport" --bind 127.0.0.1 --appendonly no ${EMQD_ARGS:-} >"$work/emqd.log" 2>&1 &
pids+=($!); wait_ping "$eport" "$!" || { cat "$work/emqd.log" >&2; exit 1; }

rport=$(free_port)
while [ "$rport" = "$eport" ]; do rport=$(free_port); done
"$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --daemonize no --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!); wait_ping "$rport" "$!" || { cat "$work/redis.log" >&2; exit 1; }

# Keys the custom commands hit: a hash with field f, a 1000-member zset.
populate() {
  "$REDIS_CLI" -h 127.0.0.1 -p "$1" HSET bench:h f somevalue n 0 >/dev/null
  local args=() i
  for i in $(seq 1000); do args+=("$i" "m:$i"); done
  "$REDIS_CLI" -h 127.0.0.1 -p "$1" ZADD bench:z "${args[@]}" >/dev/null
}
populate "$eport"
populate "$rport"

customs=("HGET bench:h f" "HINCRBY bench:h n 1" "ZRANGEBYSCORE bench:z -inf +inf LIMIT 0 10")

# bench PORT P [command...]: CSV lines "name,rps" (errors go to $work/errors).
bench() {
  local port=$1 p=$2; shift 2
  local args=(-h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$p" --csv)
  [ -n "${KEYSPACE:-}" ] && args+=(-r "$KEYSPACE")
  if [ $# -eq 0 ]; then
    args+=(-t ping_inline,hset,zadd,zpopmin)
  else
    args+=("$@")
  fi
  # redis-benchmark 7 stops at the first error reply and prints it.
  local out rc=0
  out=$("$REDIS_BENCHMARK" "${args[@]}" 2>&1 | tr -d '\r') || rc=$?
  while IFS= read -r line; do
    case "$line" in
      '"test"'*) ;;
      '"'*) echo "$line" | awk -F'","' '{gsub(/^"/,"",$1); print $1 "\t" $2}' ;;
      "") ;;
      *) echo "$side -P $p: $line" >>"$work/errors" ;;
    esac
  done <<<"$out"
  if [ "$rc" != 0 ]; then echo "$side -P $p: redis-benchmark $* exited $rc" >>"$work/errors"; fi
}

echo "emqd 127.0.0.1:$eport   redis-server 127.0.0.1:$rport   -c $CLIENTS -n $REQUESTS" >&2
results="$work/results"
: >"$results"
for p in $PIPELINES; do
  for side in emqd redis; do
    port=$eport; [ "$side" = redis ] && port=$rport
    echo "  -P $p $side ..." >&2
    bench "$port" "$p" | sed "s/^/$side\t$p\t/" >>"$results"
    for c in "${customs[@]}"; do
      # shellcheck disable=SC2086
      bench "$port" "$p" $c | sed "s/^/$side\t$p\t/" >>"$results"
    done
  done
done

printf '\n%-44s %3s %13s %13s %7s\n' test P "emqd req/s" "redis req/s" ratio
for p in $PIPELINES; do
  awk -F'\t' -v p="$p" '$2 == p { print $3 }' "$results" | awk '!seen[$0]++' | while IFS= read -r t; do
    e=$(awk -F'\t' -v p="$p" -v t="$t" '$1 == "emqd" && $2 == p && $3 == t { print $4 }' "$results")
    r=$(awk -F'\t' -v p="$p" -v t="$t" '$1 == "redis" && $2 == p && $3 == t { print $4 }' "$results")
    awk -v t="$t" -v p="$p" -v e="${e:-0}" -v r="${r:-0}" 'BEGIN {
      printf "%-44s %3s %13.0f %13.0f %6.2fx\n", t, p, e, r, (r > 0 ? e / r : 0) }'
  done
done
if [ -s "$work/errors" ]; then
  echo >&2
  echo "errors (rows missing above ran into them; first 20):" >&2
  head -20 "$work/errors" >&2
  exit 1
fi
