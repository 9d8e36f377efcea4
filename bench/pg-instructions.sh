#!/usr/bin/env bash
# pg-instructions.sh: what each BenchmarkSQL mode costs PostgreSQL, in
# instructions per write, counted by valgrind's callgrind (steady under
# machine load, unlike time).
#
#   bench/pg-instructions.sh [MODE...]     (run as root or as postgres)
#
# It starts a private PostgreSQL 15 (initdb in a temporary directory, a free
# loopback port, autovacuum off) under callgrind, following its backends,
# and runs each mode (default: the 1-client statement modes plain,
# fenced-exec and noop-pipeline, and write=transaction/clients=1/mode=plain)
# twice, BENCH_CG_N writes (default 2000) and twice as many. Each backend
# writes its count when it exits (the benchmark's pool closes); the busy
# backend's count less the median backend's (idle) is the run's, and the
# difference between the two runs', divided by BENCH_CG_N, is the cost of
# one write without the set-up (schema, migrations, connections).
# BENCH_PG_TEST names a prebuilt test binary of this package to use.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pgbin=${BENCH_PG_BIN:-/usr/lib/postgresql/15/bin}
n=${BENCH_CG_N:-2000}
modes=("$@")
[[ ${#modes[@]} -gt 0 ]] || modes=(write=statement/clients=1/mode=plain write=statement/clients=1/mode=fenced-exec
	write=statement/clients=1/mode=noop-pipeline write=transaction/clients=1/mode=plain)
command -v valgrind >/dev/null || { echo "pg-instructions.sh: valgrind not found" >&2; exit 2; }

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	as_pg "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/cg"
[[ $(id -u) == 0 ]] && chown -R postgres "$work"
as_pg "$pgbin/initdb" -D "$work/data" -A trust -U postgres >"$work/initdb.log"
as_pg valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg/cg.%p" \
	"$pgbin/postgres" -D "$work/data" -p "$port" -k "$work" -c listen_addresses=127.0.0.1 \
	-c autovacuum=off >"$work/valgrind.log" 2>&1 &
url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
for _ in $(seq 300); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.2; done
pmpid=$(head -1 "$work/data/postmaster.pid")
sleep 2
background=$(pgrep -c -P "$pmpid") # checkpointer, walwriter and the like
test=${BENCH_PG_TEST:-}
if [[ -z $test ]]; then
	test=$work/bench.test
	(cd "$here" && go test -c -o "$test" .)
fi

# total runs the benchmark for count writes and prints the instructions of
# the backends that served it.
total() {
	local mode=$1 count=$2 before
	before=$(ls "$work/cg")
	(cd "$here" && FENCEKIT_POSTGRES_URL=$url "$test" -test.run '^$' -test.bench "^BenchmarkSQL/$mode\$" \
		-test.benchtime "${count}x" >"$work/run.txt" 2>&1) || { cat "$work/run.txt" >&2; exit 1; }
	grep -q "^BenchmarkSQL/$mode" "$work/run.txt" || { cat "$work/run.txt" >&2; exit 1; }
	# wait until the backends have exited, having written their counts
	for _ in $(seq 600); do
		[[ $(pgrep -c -P "$pmpid") -le $background ]] && break
		sleep 0.5
	done
	# pgxpool hands a lone client the same connection every time: its
	# backend's count less an idle one's (each starts with what the
	# postmaster had counted when it forked)
	comm -13 <(echo "$before") <(ls "$work/cg") | while read -r f; do
		awk '/^totals:/ {print $2; exit}' "$work/cg/$f"
	done | sort -n | awk '{v[NR] = $1} END {print v[NR] - v[int((NR + 1) / 2)]}'
}

printf '| mode | PostgreSQL instructions per write |\n|---|---:|\n'
for mode in "${modes[@]}"; do
	a=$(total "$mode" "$n")
	b=$(total "$mode" $((2 * n)))
	printf '| %s | %s |\n' "$mode" $(((b - a) / n))
done
