// Command benchratio turns `go test -bench` output of several interleaved
// rounds into Markdown tables: for every benchmark family and unit, one row
// per configuration and one column per compared library or mode, each cell
// the median over the rounds and its ratio to the reference column (the
// hand-written baseline for leases, the plain write for SQL and S3).
//
//	benchratio [-samples DIR] bench.txt...
//
// With -samples, it also pools the raw latency samples the latency
// benchmarks wrote there (BENCH_SAMPLES_DIR) over all rounds and prints their
// percentiles, which a single round has too few samples to estimate.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// columnKeys are the name keys that become columns, with the reference
// value of each.
var columnKeys = []struct{ key, ref string }{{"lib", "baseline"}, {"mode", "plain"}}

func main() {
	samples := flag.String("samples", "", "directory of raw latency samples (BENCH_SAMPLES_DIR)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchratio [-samples DIR] bench.txt...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var results []Result
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(1)
		}
		rs, err := Parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchratio: %s: %v\n", name, err)
			os.Exit(1)
		}
		results = append(results, rs...)
	}
	WriteTables(os.Stdout, results)
	if *samples != "" {
		if err := WriteSamples(os.Stdout, *samples); err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(1)
		}
	}
}

// Result is one benchmark line: its name split into family, row and column,
// and its values by unit.
type Result struct {
	Family, Row, Col, ColKey string
	Values                   map[string]float64
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// Parse reads benchmark lines ("BenchmarkX/a=b-2  N  v unit  v unit ...");
// other lines are skipped. ns/op becomes µs/op and X-ns/op X-µs/op; units
// ending in -ns (latency percentiles) are scaled per table (see scaleNs).
func Parse(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		res := Result{Values: map[string]float64{}}
		parts := strings.Split(procSuffix.ReplaceAllString(f[0], ""), "/")
		res.Family = parts[0]
		var row []string
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			if res.ColKey == "" && isColumnKey(k) {
				res.ColKey, res.Col = k, v
				continue
			}
			row = append(row, p)
		}
		res.Row = strings.Join(row, "/")
		if res.ColKey == "" {
			res.Col = "value" // nothing to compare: one column
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("value %q in %q: %w", f[i], sc.Text(), err)
			}
			unit := f[i+1]
			switch {
			case unit == "ns/op":
				v, unit = v/1e3, "µs/op"
			case strings.HasSuffix(unit, "-ns/op"):
				v, unit = v/1e3, strings.TrimSuffix(unit, "-ns/op")+"-µs/op"
			}
			res.Values[unit] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

func isColumnKey(k string) bool {
	for _, c := range columnKeys {
		if c.key == k {
			return true
		}
	}
	return false
}

func refOf(key string) string {
	for _, c := range columnKeys {
		if c.key == key {
			return c.ref
		}
	}
	return ""
}

// WriteTables prints, per family and unit, the medians and their ratios to
// the reference column.
func WriteTables(w io.Writer, results []Result) {
	type cell = []float64
	families := orderedKeys(results, func(r Result) string { return r.Family })
	for _, fam := range families {
		var rows, cols, units []string
		colKey := ""
		data := map[[3]string]cell{} // row, col, unit
		for _, r := range results {
			if r.Family != fam {
				continue
			}
			colKey = r.ColKey
			rows = appendNew(rows, r.Row)
			cols = appendNew(cols, r.Col)
			for u, v := range r.Values {
				units = appendNew(units, u)
				k := [3]string{r.Row, r.Col, u}
				data[k] = append(data[k], v)
			}
		}
		ref := refOf(colKey)
		sort.SliceStable(cols, func(i, j int) bool { return cols[i] == ref && cols[j] != ref })
		sort.Slice(units, func(i, j int) bool {
			if (units[i] == "µs/op") != (units[j] == "µs/op") {
				return units[i] == "µs/op"
			}
			return units[i] < units[j]
		})
		for _, u := range units {
			label, div := scaleNs(u, data)
			n := 0
			for k, vs := range data {
				if k[2] == u {
					n = max(n, len(vs))
				}
			}
			if ref == "" {
				fmt.Fprintf(w, "\n%s, %s (median of %d rounds)\n\n", fam, label, n)
			} else {
				fmt.Fprintf(w, "\n%s, %s (median of %d rounds; ratio to %s)\n\n", fam, label, n, ref)
			}
			fmt.Fprintf(w, "| %s | %s |\n", orDash(rowTitle(rows)), strings.Join(cols, " | "))
			fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(cols)))
			for _, row := range rows {
				present := false
				line := "| " + orDash(row) + " |"
				base := median(data[[3]string{row, ref, u}])
				for _, c := range cols {
					vs := data[[3]string{row, c, u}]
					if len(vs) == 0 {
						line += " – |"
						continue
					}
					present = true
					m := median(vs)
					line += " " + format(m/div)
					if c != ref && base != 0 && !math.IsNaN(base) {
						line += fmt.Sprintf(" (%.2f×)", m/base)
					}
					if len(vs) != n {
						line += fmt.Sprintf(" n=%d", len(vs))
					}
					line += " |"
				}
				if present {
					fmt.Fprintln(w, line)
				}
			}
		}
	}
}

// scaleNs returns the label and divisor of unit u: a unit ending in -ns is
// shown in µs when every median of its table is below 1 ms, else in ms.
func scaleNs(u string, data map[[3]string][]float64) (string, float64) {
	base, ok := strings.CutSuffix(u, "-ns")
	if !ok {
		return u, 1
	}
	for k, vs := range data {
		if k[2] == u && median(vs) >= 1e6 {
			return base + "-ms", 1e6
		}
	}
	return base + "-µs", 1e3
}

// WriteSamples prints pooled percentiles of every samples file in dir,
// one table per benchmark family.
func WriteSamples(w io.Writer, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	lastFam := ""
	for _, path := range files {
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(path), ".txt"), "~", "/")
		fam, cfg, _ := strings.Cut(name, "/")
		vs, err := readSamples(path)
		if err != nil {
			return err
		}
		if fam != lastFam {
			fmt.Fprintf(w, "\n%s, pooled samples over all rounds (ms)\n\n", fam)
			fmt.Fprintln(w, "| config | n | p50 | p90 | p99 | max |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
			lastFam = fam
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", cfg, len(vs),
			format(quantile(vs, .5)), format(quantile(vs, .9)), format(quantile(vs, .99)), format(quantile(vs, 1)))
	}
	return nil
}

func readSamples(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var vs []float64
	for _, l := range strings.Fields(string(b)) {
		v, err := strconv.ParseFloat(l, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// quantile is the nearest-rank q-quantile (NaN for no values).
func quantile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := min(max(int(math.Ceil(q*float64(len(s)))), 1), len(s))
	return s[rank-1]
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func format(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func rowTitle(rows []string) string {
	if len(rows) == 1 && rows[0] == "" {
		return ""
	}
	return "config"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func orderedKeys(rs []Result, key func(Result) string) []string {
	var out []string
	for _, r := range rs {
		out = appendNew(out, key(r))
	}
	return out
}
