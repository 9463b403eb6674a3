#!/usr/bin/env bash
# soak-memory.sh: the resident memory of `agentmem serve` under context
# reads of many large sessions, as docs/benchmarks.md records it.
#
#   scripts/soak-memory.sh [BINARY [SERVE_FLAG...]]
#
#   e.g. scripts/soak-memory.sh ./agentmem --cache-bytes 64MiB
#
# It starts BINARY (default: agentmem on PATH) as `serve` over a new SQLite
# file in a temporary directory, then runs `agentmem-bench load --op
# context` (the binary BENCH, by default one built from this checkout)
# against it: SESSIONS sessions of STEPS generated steps each (realistic
# agent actions, about 3 KB of JSON each), one client per session reading
# its context at BUDGET tokens (0: no budget) for DURATION. Meanwhile it
# samples the server's resident set size every second (VmRSS, and RssAnon:
# VmRSS less the pages of files, such as the SQLite file the store maps),
# and prints it when idle, during seeding (the peak) and during the reads
# (the peak and the last sample), the load result, and at the end of
# the reads the server's session cache gauges and Go heap. Everything is
# removed at the end.
#
# Environment: SESSIONS (30), STEPS (1500), DURATION (60s), BUDGET (8000),
# BENCH (an agentmem-bench binary).
set -euo pipefail

bin=${1:-agentmem}
shift || true
sessions=${SESSIONS:-30}
steps=${STEPS:-1500}
duration=${DURATION:-60s}
budget=${BUDGET:-8000}
bench=${BENCH:-}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

dir=$(mktemp -d /tmp/agentmem-soak.XXXXXX)
server_pid=
sampler_pid=
cleanup() {
	[ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null || true
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

if [ -z "$bench" ]; then
	bench=$dir/agentmem-bench
	(cd "$repo" && go build -o "$bench" ./cmd/agentmem-bench)
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$bin" serve --addr "127.0.0.1:$port" --store "sqlite://$dir/soak.db" --log-level warn "$@" 2>"$dir/serve.log" &
server_pid=$!
for _ in $(seq 100); do
	curl -fsS "$url/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "$url/healthz" >/dev/null || { cat "$dir/serve.log"; exit 1; }

# VmRSS, and its anonymous part (the Go heap and stacks: RssAnon) apart
# from file pages (RssFile: SQLite maps its file, and the pages read count).
rss() { awk '/^VmRSS/ {r = $2} /^RssAnon/ {a = $2} END {print r, a}' "/proc/$server_pid/status"; }
( while kill -0 "$server_pid" 2>/dev/null; do echo "$(date +%s) $(rss)"; sleep 1; done ) >"$dir/rss" &
sampler_pid=$!
sleep 2
idle=$(rss)

"$bench" load --server "$url" --op context --sessions "$sessions" --clients "$sessions" --steps "$steps" \
	--budget "$budget" --duration "$duration" --warmup 5s --keep 2>"$dir/load.log" >"$dir/load.json" &
load_pid=$!
# The reads start when the load generator logs "running".
until grep -q '"running"\|msg=running' "$dir/load.log" 2>/dev/null || ! kill -0 "$load_pid" 2>/dev/null; do sleep 0.5; done
start=$(date +%s)
wait "$load_pid" || { cat "$dir/load.log"; exit 1; }
end=$(date +%s)
gauges=$(curl -fsS "$url/metrics" | grep -E '^(agentmem_session_cache_(bytes|sessions|total)|go_memstats_(heap_inuse|next_gc)_bytes) ' || true)

# peak FIELD FROM TO: the largest sample of a column (2: VmRSS, 3: RssAnon)
# between two times, in MiB.
peak() { awk -v f="$1" -v s="$2" -v e="$3" '$1 >= s && $1 <= e && $f > m {m = $f} END {printf "%.0f", m / 1024}' "$dir/rss"; }
last() { awk -v f="$1" -v e="$2" '$1 <= e {v = $f} END {printf "%.0f", v / 1024}' "$dir/rss"; }
echo "binary: $bin $*"
echo "sessions: $sessions x $steps steps, $duration of context reads at budget $budget"
echo "idle: rss $(echo "$idle" | awk '{printf "%.0f", $1 / 1024}') MiB, anon $(echo "$idle" | awk '{printf "%.0f", $2 / 1024}') MiB"
echo "seeding peak: rss $(peak 2 0 $((start - 1))) MiB, anon $(peak 3 0 $((start - 1))) MiB"
echo "reads peak: rss $(peak 2 "$start" "$end") MiB, anon $(peak 3 "$start" "$end") MiB"
echo "reads last: rss $(last 2 "$end") MiB, anon $(last 3 "$end") MiB"
echo "load: $(cat "$dir/load.json")"
if [ -n "$gauges" ]; then echo "$gauges"; fi
