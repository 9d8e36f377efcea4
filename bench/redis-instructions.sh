#!/usr/bin/env bash
# redis-instructions.sh: what each lock library costs the Redis server, in
# instructions per operation, counted by valgrind's callgrind. Unlike time
# and CPU figures, the counts do not move with machine load: the same binary,
# server and inputs give the same count to within a fraction of a percent.
#
#   bench/redis-instructions.sh [OUT.md]
#
# It starts a private redis-server under callgrind, then runs each library's
# BenchmarkLease operation for a fixed number of iterations against it
# (BENCH_CG_N, default 2000), zeroing the counters before and dumping them
# after. The count includes everything the server does for the operation:
# reading and parsing the request, the command or script, the reply. The
# benchmark's own bookkeeping (INFO commandstats twice per run, one untimed
# warm-up acquire and release, connection set-up) is included too, well
# under 1% at 2000 iterations; deleting the keys afterwards is not
# (BENCH_KEEP_KEYS=1: on distinct keys fencekit leaves a token counter per
# name, and deleting 2000 of them, SCAN and UNLINK, cost 8,300 instructions
# per key). Needs valgrind (callgrind_control,
# callgrind_annotate) and redis-server.
#
# BENCH_CG_CALLS=1 adds a second table: what one redis.call costs inside a
# script, each call alone in a script run with redis-cli -r, minus an empty
# script (about 30 s more). BENCH_CG_LIBS and BENCH_CG_OPS (space-separated,
# baseline first) narrow the first table.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/dev/stdout}
n=${BENCH_CG_N:-2000}
for tool in valgrind callgrind_control callgrind_annotate redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "redis-instructions.sh: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d)
cleanup() {
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
trap cleanup EXIT

(cd "$here" && go test -c -o "$work/bench.test" .)
valgrind --tool=callgrind --callgrind-out-file="$work/cg" \
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/valgrind.log" 2>&1 &
vpid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-cli -p "$port" ping >/dev/null

libs=(${BENCH_CG_LIBS:-baseline fencekit redislock redsync fencekit-lua baseline-fenced})
ops=(${BENCH_CG_OPS:-acquire-release-same acquire-release-distinct renew contended})
declare -A count
for op in "${ops[@]}"; do
	for lib in "${libs[@]}"; do
		redis-cli -p "$port" flushall >/dev/null # each run starts from an empty keyspace
		callgrind_control -z "$vpid" >/dev/null 2>&1
		(cd "$here" && FENCEKIT_REDIS_ADDR=127.0.0.1:$port BENCH_KEEP_KEYS=1 "$work/bench.test" -test.run '^$' \
			-test.bench "^BenchmarkLease/op=$op/lib=$lib\$" -test.benchtime "${n}x" >"$work/run.txt" 2>&1) ||
			{ cat "$work/run.txt" >&2; exit 1; }
		grep -q "^BenchmarkLease/op=$op/lib=$lib" "$work/run.txt" || { cat "$work/run.txt" >&2; exit 1; }
		callgrind_control -d "$vpid" >/dev/null 2>&1
		dump=$(ls -t "$work"/cg.* | head -1)
		total=$(callgrind_annotate "$dump" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
		rm -f "$dump"
		count[$op/$lib]=$((total / n))
		echo "redis-instructions.sh: op=$op lib=$lib: ${count[$op/$lib]} instructions/op" >&2
	done
done

# count RUN...: the server's instructions per command of redis-cli -r $n RUN...
count() {
	callgrind_control -z "$vpid" >/dev/null 2>&1
	redis-cli -p "$port" -r "$n" "$@" >/dev/null
	callgrind_control -d "$vpid" >/dev/null 2>&1
	local dump
	dump=$(ls -t "$work"/cg.* | head -1)
	callgrind_annotate "$dump" | awk -v n="$n" '/PROGRAM TOTALS/ {gsub(",", "", $1); print int($1 / n); exit}'
	rm -f "$dump"
}

calls=()
if [[ "${BENCH_CG_CALLS:-}" == 1 ]]; then
	redis-cli -p "$port" set k:counter 1764000000000000 >/dev/null
	calls=(
		"return 1"
		"redis.call('TIME') return 1"
		"redis.call('GET', KEYS[2]) return 1"
		"redis.call('PTTL', KEYS[1]) return 1"
		"redis.call('SET', KEYS[2], '1764000000000000') return 1"
		"redis.call('SET', KEYS[2], '1764000000000000', 'GET') return 1"
		"redis.call('SET', KEYS[1], '1764000000000000:0123456789abcdef', 'PX', '10000') return 1"
		"redis.call('SET', KEYS[1], '1764000000000000:0123456789abcdef', 'PX', 10000) return 1"
		"redis.call('PUBLISH', 'k:released', '1764000000000000:0123456789abcdef') return 1"
		"redis.call('APPEND', 'k:append', '+') return 1"
		"return {1, 'x'}"
	)
	declare -A ccount
	for src in "${calls[@]}"; do
		sha=$(redis-cli -p "$port" script load "$src")
		ccount[$src]=$(count evalsha "$sha" 2 k:lock k:counter)
		echo "redis-instructions.sh: $src: ${ccount[$src]} instructions/call" >&2
	done
	# What one more argument costs a request: the empty script with ARGV of
	# one value, then of two (release.lua's value and a channel name).
	sha=$(redis-cli -p "$port" script load "return 1")
	arg1=$(count evalsha "$sha" 2 k:lock k:counter 1764000000000000:web-1/7:0123456789abcdef)
	arg2=$(count evalsha "$sha" 2 k:lock k:counter 1764000000000000:web-1/7:0123456789abcdef 'fencekit:{k}:released')
fi

{
	printf '| config |'
	for lib in "${libs[@]}"; do printf ' %s |' "$lib"; done
	printf '\n|---|'
	for _ in "${libs[@]}"; do printf -- '---:|'; done
	echo
	for op in "${ops[@]}"; do
		printf '| op=%s |' "$op"
		base=${count[$op/baseline]}
		for lib in "${libs[@]}"; do
			v=${count[$op/$lib]}
			if [[ $lib == baseline ]]; then
				printf ' %s |' "$v"
			else
				printf ' %s (%s×) |' "$v" "$(awk -v a="$v" -v b="$base" 'BEGIN {printf "%.2f", a / b}')"
			fi
		done
		echo
	done
	echo
	echo "(Redis server instructions per operation, callgrind, $n iterations"
	echo "each; ratio to baseline)"
	if ((${#calls[@]})); then
		empty=${ccount["return 1"]}
		echo
		echo "| script (EVALSHA, 2 keys) | instructions per request | minus the empty script |"
		echo "|---|---:|---:|"
		for src in "${calls[@]}"; do
			echo "| \`$src\` | ${ccount[$src]} | $((ccount[$src] - empty)) |"
		done
		echo "| \`return 1\`, ARGV of two values instead of one | $arg2 | $((arg2 - arg1)) (over one value) |"
		echo
		echo "(redis-cli -r $n; a number argument, 10000 instead of '10000', is converted by Lua)"
	fi
} >"$out"
