package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkLease/op=renew/lib=baseline-2   100  20000 ns/op  3.000 redis-cmds/op  384 B/op  12 allocs/op
--- BENCH: BenchmarkLease/op=renew/lib=baseline-2
    lease_bench_test.go:76: ops=1 commands per op: evalsha=1.00
BenchmarkLease/op=renew/lib=fencekit-2   100  30000 ns/op  3.000 redis-cmds/op  900 B/op  19 allocs/op
BenchmarkLease/op=renew/lib=baseline-2   100  22000 ns/op  3.000 redis-cmds/op  384 B/op  12 allocs/op
BenchmarkLease/op=renew/lib=fencekit-2   100  20000 ns/op  3.000 redis-cmds/op  900 B/op  19 allocs/op
BenchmarkLease/op=renew/lib=baseline-2   100  24000 ns/op  3.000 redis-cmds/op  384 B/op  12 allocs/op
BenchmarkLease/op=renew/lib=fencekit-2   100  33000 ns/op  3.000 redis-cmds/op  900 B/op  19 allocs/op
BenchmarkHandoff/lib=fencekit-2   30  1000 ns/op  800000 p50-ns  2500 client-cpu-ns/op
`

func TestParseAndTables(t *testing.T) {
	rs, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 7 {
		t.Fatalf("parsed %d results, want 7", len(rs))
	}
	r := rs[0]
	if r.Family != "BenchmarkLease" || r.Row != "op=renew" || r.ColKey != "lib" || r.Col != "baseline" {
		t.Errorf("first result %+v", r)
	}
	if r.Values["µs/op"] != 20 || r.Values["allocs/op"] != 12 {
		t.Errorf("values %v", r.Values)
	}
	if v := rs[6].Values["p50-ns"]; v != 800000 {
		t.Errorf("p50-ns 800000 parsed as %v", v)
	}
	if v := rs[6].Values["client-cpu-µs/op"]; v != 2.5 {
		t.Errorf("client-cpu-ns/op 2500 became client-cpu-µs/op %v, want 2.5", v)
	}
	var out bytes.Buffer
	WriteTables(&out, rs)
	// Medians: baseline 22 µs, fencekit 30 µs: ratio 1.36.
	if !strings.Contains(out.String(), "| op=renew | 22.0 | 30.0 (1.36×) |") {
		t.Errorf("µs/op table lacks the medians and ratio:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "BenchmarkHandoff, p50-µs (median of 1 rounds; ratio to baseline)") ||
		!strings.Contains(out.String(), "| – | 800 |") {
		t.Errorf("p50-ns of 800000 not shown as 800 µs:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "median of 3 rounds; ratio to baseline") {
		t.Errorf("table header lacks the round count:\n%s", out.String())
	}
}

func TestParseRejectsBadValue(t *testing.T) {
	if _, err := Parse(strings.NewReader("BenchmarkX-2 10 abc ns/op\n")); err == nil {
		t.Error("Parse accepted a non-numeric value")
	}
}
