#!/usr/bin/env bash
# bench/compare.sh: emqd against redis-server 7, per core, in one command.
#
# Builds emqd and the drivers into bench/bin, then runs bench/cmd/compare
# pinned to CPU 1 (redis-benchmark and the drivers run there) while both
# servers run pinned to CPU 0. Rounds alternate emqd, redis, emqd, redis ...
# and the table prints medians and the ratio emqd/redis of every measure
# with its goal: redis-benchmark -P 1 and -P 32, the job cycle (native verbs
# against bench/lua through bench/cmd/jobcycle, in the NEXT form and the
# plain one: bench/README.md), the stall sweep, bytes per
# pending job, boot from an AOF (bench/cmd/aofboot) and the peak memory of
# big commands. A full run takes about 20 minutes on an idle 2-core machine.
#
# Usage:
#   bench/compare.sh            the full run (3 rounds)
#   bench/compare.sh --quick    a smoke run (small counts, one round)
#   bench/compare.sh --only rb,mem --rounds 5      (flags of bench/cmd/compare; --help lists them)
#   bench/compare.sh --valkey /path/to/valkey-8.0.1 --only mem
#                               against that directory's valkey-server instead of redis-server
# Environment: SERVER_CPU [0], CLIENT_CPU [1], EMQD_VALKEY_DIR (as --valkey; the
# flag wins). Without either the reference is Debian's redis-server 7.
#
# The numbers are only meaningful on an otherwise idle machine: the script
# prints the load average at the start and at the end; alternation and
# medians soften, but do not remove, the noise of other work.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
valkey=${EMQD_VALKEY_DIR:-}
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --valkey) valkey=${2:?--valkey needs a directory}; shift 2 ;;
    --valkey=*) valkey=${1#--valkey=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
ref=()
if [ -n "$valkey" ]; then
  [ -x "$valkey/valkey-server" ] || { echo "no executable valkey-server in $valkey" >&2; exit 2; }
  ref=(--redis-bin "$valkey/valkey-server")
fi
for b in redis-server redis-benchmark redis-cli taskset; do
  command -v "$b" >/dev/null || { echo "missing $b (Debian packages redis-server, redis-tools, util-linux)" >&2; exit 2; }
done
echo "building bench/bin ..." >&2
mkdir -p bench/bin
go build -o bench/bin/emqd ./cmd/emqd
go build -o bench/bin/jobcycle ./bench/cmd/jobcycle
go build -o bench/bin/aofboot ./bench/cmd/aofboot
go build -o bench/bin/compare ./bench/cmd/compare
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exec taskset -c "$CLIENT_CPU" bench/bin/compare --server-cpu "$SERVER_CPU" --client-cpu "$CLIENT_CPU" "${ref[@]}" "${args[@]}"
