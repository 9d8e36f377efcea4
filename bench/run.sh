#!/usr/bin/env bash
# run.sh: run fencekit's peer benchmarks in interleaved rounds and summarize.
#
#   bench/run.sh [OUTDIR]
#
# Each round runs every benchmark once, the compared libraries (or plain and
# fenced modes) one after the other inside each benchmark, so rounds go
# A B C D, B C D A, C D A B, ...: machine drift falls on all of them alike
# and none always runs first or right after the same one. Results
# are appended to OUTDIR/lease.txt and OUTDIR/latency.txt, summarized with
# benchstat (OUTDIR/benchstat.txt) and as Markdown ratio tables against the
# baseline (OUTDIR/ratios.md), both also printed.
#
# Environment:
#   BENCH_SHORT=1      quick mode for CI: 2 rounds, short benchtimes (~1-2 min)
#   BENCH_ROUNDS=N     number of rounds (default 6, short 2)
#   BENCH_MANY_WINDOW  how long BenchmarkManyLeases holds its 10,000 leases
#                      (default 20s, short 7s); it runs once, after the rounds
#   BENCH_CALLGRIND=0  skip the Redis instruction counts (redis-instructions.sh,
#                      about 1.5 minutes; skipped anyway without valgrind)
#   BENCH_PMQOS=0      let idle CPUs halt (default: hold /dev/cpu_dma_latency
#                      at 0 while running, when writable; see below)
#   FENCEKIT_REDIS_ADDR, FENCEKIT_POSTGRES_URL, FENCEKIT_S3_ENDPOINT (+ keys):
#                      servers; see bench/doc.go (by default a private
#                      redis-server and versitygw are started per round)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${TMPDIR:-/tmp}/fencekit-bench-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out/samples"
out=$(cd "$out" && pwd)

if [[ "${BENCH_SHORT:-}" == 1 ]]; then
	rounds=${BENCH_ROUNDS:-2} benchtime=200ms handoffN=10 takeoverN=8
	export BENCH_MANY_WINDOW=${BENCH_MANY_WINDOW:-7s}
else
	rounds=${BENCH_ROUNDS:-6} benchtime=500ms handoffN=30 takeoverN=24
fi

# Keep idle CPUs polling instead of halting while the benchmarks run (PM
# QoS: CPU latency 0 µs, held while fd 9 is open, i.e. until run.sh exits).
# On a virtual machine whose idle vCPUs halt, every wake-up of a process
# that waits on the network costs a hypervisor exit, which on the reference
# machine quadruples a round trip to a local Redis (see docs/performance.md);
# that measures the hypervisor, not the libraries. BENCH_PMQOS=0 turns it off.
# Without a cpuidle driver (current_driver "none", e.g. a Firecracker guest
# without cpuidle-haltpoll) the kernel halts idle CPUs whatever PM QoS says.
pmqos="not held (BENCH_PMQOS=0 or /dev/cpu_dma_latency not writable): idle CPUs may halt"
if [[ "${BENCH_PMQOS:-1}" == 1 && -w /dev/cpu_dma_latency ]] && exec 9>/dev/cpu_dma_latency && printf 0 >&9; then
	pmqos="held at 0 µs through /dev/cpu_dma_latency: idle CPUs poll instead of halting"
fi
idledrv=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo unknown)
if [[ $idledrv == none ]]; then
	pmqos="$pmqos; but cpuidle driver none: idle CPUs halt anyway"
fi

gobin=$(go env GOPATH | cut -d: -f1)/bin
benchstat=$(command -v benchstat || true)
if [[ -z "$benchstat" ]]; then
	if [[ ! -x "$gobin/benchstat" ]]; then
		echo "run.sh: installing benchstat" >&2
		go install golang.org/x/perf/cmd/benchstat@latest
	fi
	benchstat=$gobin/benchstat
fi

cd "$here"
go test -c -o "$out/bench.test" .
go build -o "$out/benchratio" ./cmd/benchratio

{
	echo "date:      $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "nproc:     $(nproc)"
	echo "cpu:       $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "go:        $(go version)"
	echo "redis:     $(redis-server --version 2>/dev/null || echo unknown)"
	echo "postgres:  $(psql "${FENCEKIT_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}" -Atc 'select version()' 2>/dev/null || echo unknown)"
	vgw=${FENCEKIT_VERSITYGW:-$(command -v versitygw || echo "$gobin/versitygw")}
	echo "versitygw: $(go version -m "$vgw" 2>/dev/null | awk '$1 == "mod" {print $3; exit}' || true) ($vgw)"
	echo "commit:    $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here/.." status --porcelain -- lease sqlfence blobfence fence 2>/dev/null | grep -q . && echo ' (lease/sqlfence/blobfence/fence have uncommitted changes)' || true)"
	echo "rounds:    $rounds (benchtime $benchtime, hand-off ${handoffN}x, take-over ${takeoverN}x)"
	echo "tmp fs:    $(df -T "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $2}') (the private redis-server's and versitygw's data)"
	echo "cpu idle:  PM QoS $pmqos"
	echo "clock:     $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown) (clock source)"
	echo "load:      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min averages at the start)"
} | tee "$out/machine.txt"

start=$(date +%s)
failed=
for ((r = 1; r <= rounds; r++)); do
	echo "run.sh: round $r/$rounds ($(($(date +%s) - start)) s elapsed)" >&2
	export BENCH_ROUND=$r # rotates which library or mode goes first
	# A failed benchmark is reported at the end; the other rounds still run.
	"$out/bench.test" -test.run '^$' -test.bench '^(BenchmarkLease|BenchmarkSaturation|BenchmarkSQL|BenchmarkS3Put)$' \
		-test.benchtime "$benchtime" -test.count 1 >>"$out/lease.txt" || failed="$failed lease/sql/s3@$r"
	BENCH_SAMPLES_DIR=$out/samples "$out/bench.test" -test.run '^$' -test.bench '^(BenchmarkPing|BenchmarkHandoff)$' \
		-test.benchtime "${handoffN}x" -test.count 1 >>"$out/latency.txt" || failed="$failed handoff@$r"
	BENCH_SAMPLES_DIR=$out/samples "$out/bench.test" -test.run '^$' -test.bench '^BenchmarkTakeover$' \
		-test.benchtime "${takeoverN}x" -test.count 1 >>"$out/latency.txt" || failed="$failed takeover@$r"
done
# Holding 10,000 leases takes a window of wall time per library: once.
echo "run.sh: many leases ($(($(date +%s) - start)) s elapsed)" >&2
"$out/bench.test" -test.run '^$' -test.bench '^BenchmarkManyLeases$' -test.benchtime 1x -test.count 1 \
	>>"$out/lease.txt" || failed="$failed manyleases"
echo "run.sh: $rounds rounds in $(($(date +%s) - start)) s" >&2
echo "end:       $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds in $(($(date +%s) - start)) s" >>"$out/machine.txt"

{
	for f in Lease Saturation ManyLeases Handoff Takeover; do
		echo "## $f (columns: /lib; deltas against baseline)"
		"$benchstat" -filter ".name:$f" -col /lib@'(baseline fencekit redislock redsync fencekit-lua baseline-fenced fencekit-nobatch)' "$out/lease.txt" "$out/latency.txt"
		echo
	done
	for f in SQL S3Put; do
		echo "## $f (columns: /mode; deltas against plain)"
		"$benchstat" -filter ".name:$f" -col /mode@'(plain fenced fenced-guard fenced-newtoken fenced-exec fenced-read fenced-etag plain-cond)' "$out/lease.txt"
		echo
	done
} >"$out/benchstat.txt" 2>&1
"$out/benchratio" -samples "$out/samples" "$out/lease.txt" "$out/latency.txt" >"$out/ratios.md"

# Instructions the Redis server runs per operation: unlike the timings, they
# do not move with machine load.
if [[ "${BENCH_CALLGRIND:-1}" == 1 ]] && command -v valgrind >/dev/null; then
	if [[ "${BENCH_SHORT:-}" == 1 ]]; then export BENCH_CG_N=${BENCH_CG_N:-300}; fi
	bash "$here/redis-instructions.sh" "$out/redis-instructions.md" || failed="$failed redis-instructions"
fi

cat "$out/benchstat.txt" "$out/ratios.md"
[[ -f "$out/redis-instructions.md" ]] && cat "$out/redis-instructions.md"
echo "run.sh: results in $out" >&2
if [[ -n "$failed" ]]; then
	echo "run.sh: FAILED benchmark runs (name@round):$failed; see the FAIL lines in $out/*.txt" >&2
	exit 1
fi
