package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/internal/sweep"
)

// axisValue is a flag.Value for a sweep axis: a comma-separated list of
// numbers or fractions ("0,0.5,1", "1/3") or a range LO:HI:STEP ("0:2:0.1").
type axisValue struct{ v *[]float64 }

func (a axisValue) String() string {
	if a.v == nil {
		return ""
	}
	parts := make([]string, len(*a.v))
	for i, f := range *a.v {
		parts[i] = strconv.FormatFloat(f, 'g', 4, 64)
	}
	return strings.Join(parts, ",")
}

func (a axisValue) Set(s string) error {
	vals, err := parseAxis(s)
	if err != nil {
		return err
	}
	*a.v = vals
	return nil
}

// parseAxis parses an axis; errors name the part that is not a number.
func parseAxis(s string) ([]float64, error) {
	if lo, rest, ok := strings.Cut(s, ":"); ok {
		hi, step, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, fmt.Errorf("%q: a range is LO:HI:STEP, such as 0:2:0.1", s)
		}
		var r [3]float64
		for i, part := range []string{lo, hi, step} {
			f, err := parseRatio(part)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", s, err)
			}
			r[i] = f
		}
		if r[2] <= 0 || r[1] < r[0] || (r[1]-r[0])/r[2] > 1000 {
			return nil, fmt.Errorf("%q: want LO <= HI and 0 < STEP, at most 1000 steps", s)
		}
		var vals []float64
		for i := 0; ; i++ {
			v := r[0] + float64(i)*r[2]
			if v > r[1]+r[2]*1e-9 {
				break
			}
			vals = append(vals, math.Round(v*1e9)/1e9) // 0.30000000000000004 -> 0.3
		}
		return vals, nil
	}
	var vals []float64
	for _, part := range strings.Split(s, ",") {
		f, err := parseRatio(part)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		vals = append(vals, f)
	}
	return vals, nil
}

// parseRatio parses a number or a fraction such as 1/3.
func parseRatio(s string) (float64, error) {
	s = strings.TrimSpace(s)
	num, den, frac := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if !frac {
		return n, nil
	}
	d, err := strconv.ParseFloat(den, 64)
	if err != nil || d == 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return 0, fmt.Errorf("%q is not a fraction such as 1/3", s)
	}
	return n / d, nil
}

func runSweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencesim sweep", flag.ContinueOnError)
	g := sweep.DefaultGrid()
	fs.Var(axisValue{&g.Pause}, "pause", "pause lengths as fractions of the TTL: a list (0.5,1,1.5) or LO:HI:STEP")
	fs.Var(axisValue{&g.Heartbeat}, "heartbeat", "heartbeat intervals as fractions of the TTL (0: none), a list or LO:HI:STEP")
	fs.Var(axisValue{&g.Drift}, "drift", "maximum clock rate errors, a list or LO:HI:STEP")
	scheduleFlags(fs, &g.Base) // -runs counts schedules per point
	fs.IntVar(&g.Workers, "workers", runtime.GOMAXPROCS(0), "goroutines to spread the points over (the output does not depend on it)")
	var fencing fencingMode
	fs.Var(&fencing, "fencing", "`MODES` to run each schedule with, comma-separated (off,writes,claim,check-then-write; default all)")
	format := fs.String("format", "csv", "`FORMAT` of the table on stdout: csv or json")
	svgPath := fs.String("svg", "", "also write the plot of outcome rates against pause/TTL to `FILE`")
	usage := "fencesim sweep [flags]  (explore over a grid: pause/TTL x heartbeat/TTL x drift)"
	if status := parseNoArgs(fs, usage, args, stdout, stderr); status >= 0 {
		return status
	}
	if *format != "csv" && *format != "json" {
		return usageErr(stderr, "-format %q is not one of csv, json", *format)
	}
	var err error
	if g.Storages, err = fencing.storages(g.Storages); err != nil {
		return usageErr(stderr, "-fencing %v", err)
	}
	if err := g.Validate(); err != nil {
		return usageErr(stderr, "%s", strings.TrimPrefix(err.Error(), "sweep: "))
	}
	bar := newProgress(stderr, len(g.Points()), "points")
	rows, err := sweep.Run(context.Background(), g, func(done, _ int) { bar.update(done) })
	bar.clear()
	if err != nil {
		fmt.Fprintf(stderr, "fencesim: %v\n", err)
		return exitFailed
	}
	write := sweep.WriteCSV
	if *format == "json" {
		write = sweep.WriteJSON
	}
	if err := write(stdout, rows); err != nil {
		fmt.Fprintf(stderr, "fencesim: writing the table: %v\n", err)
		return exitFailed
	}
	if *svgPath != "" {
		var b bytes.Buffer
		if err := sweep.WriteSVG(&b, rows); err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\n", err)
			return exitFailed
		}
		if err := os.WriteFile(*svgPath, b.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "fencesim: svg: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stderr, "fencesim: wrote %s\n", *svgPath)
	}
	return exitOK
}
