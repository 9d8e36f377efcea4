package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// exploreFlags registers the schedule distribution flags on fs.
func exploreFlags(fs *flag.FlagSet, p *sim.ExploreParams) {
	*p = sim.DefaultExploreParams()
	scheduleFlags(fs, p)
	fs.Var(durationValue{&p.Heartbeat}, "heartbeat", "heartbeat interval, 0 for none")
	fs.Var(probValue{&p.PauseProb}, "pause-prob", "each client's chance of one stop-the-world pause")
	fs.Var(durationValue{&p.PauseMax}, "pause-max", "maximum pause length, uniform from 0")
	fs.Float64Var(&p.DriftMax, "drift", p.DriftMax, "maximum clock rate error, uniform in [-drift, drift]")
}

// scheduleFlags registers the distribution flags that explore and sweep
// share (sweep sets pauses, heartbeat and drift per point), with p's
// values as defaults.
func scheduleFlags(fs *flag.FlagSet, p *sim.ExploreParams) {
	fs.IntVar(&p.Runs, "runs", p.Runs, "number of random schedules (each runs once per storage mode)")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "seed of the first schedule; schedule i uses seed+i")
	fs.IntVar(&p.Clients, "clients", p.Clients, "clients competing for the lease")
	fs.IntVar(&p.Jobs, "jobs", p.Jobs, "jobs per client (acquire, read, writes, release)")
	fs.IntVar(&p.Writes, "writes", p.Writes, "writes per job")
	fs.Var(durationValue{&p.TTL}, "ttl", "lease time to live")
	fs.Var(durationValue{&p.Work}, "work", "mean work step before each write, uniform in [work/2, 3work/2]")
	fs.Var(durationValue{&p.DelayMax}, "delay", "maximum one-way message delay, uniform from 0")
	fs.Var(probValue{&p.CrashProb}, "crash-prob", "each client's chance of crashing in the first 40s")
}

func runExplore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencesim explore", flag.ContinueOnError)
	var p sim.ExploreParams
	exploreFlags(fs, &p)
	var out output
	out.register(fs, true)
	show := fs.Int("show", 10, "how many violating seeds to list")
	fs.IntVar(&p.Workers, "workers", runtime.GOMAXPROCS(0), "goroutines to spread the schedules over (the report does not depend on it)")
	if status := parseNoArgs(fs, "fencesim explore [flags]", args, stdout, stderr); status >= 0 {
		return status
	}
	if err := p.Validate(); err != nil {
		return usageErr(stderr, "%s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	if *show < 0 {
		return usageErr(stderr, "-show %d is negative", *show)
	}
	if out.html != "" {
		return usageErr(stderr, "explore prints a report; -html applies to replay")
	}
	var err error
	if p.Storages, err = out.fencing.storages(nil); err != nil {
		return usageErr(stderr, "-fencing %v", err)
	}
	var progress func(int)
	bar := newProgress(stderr, p.Runs, "schedules")
	if p.Runs >= 10000 {
		progress = bar.update
	}
	rep, err := sim.Explore(context.Background(), p, progress)
	bar.clear()
	if err != nil {
		fmt.Fprintf(stderr, "fencesim: %v\n", err)
		return exitFailed
	}
	if out.json {
		if err := writeReportJSON(stdout, rep, *show); err != nil {
			fmt.Fprintf(stderr, "fencesim: writing the report: %v\n", err)
			return exitFailed
		}
	} else {
		writeReport(stdout, rep, *show)
	}
	if on := rep.Tally(sim.StorageClaim); on != nil && (on.Violations > 0 || on.LostRuns > 0) {
		seed := p.Seed
		if len(on.Seeds) > 0 {
			seed = on.Seeds[0]
		}
		fmt.Fprintf(stderr, "fencesim: failed for seed=%d: fencing on let a stale write through; replay with: %s replay -seed %d -fencing on\n", seed, runFromRepo, seed)
		return exitFailed
	}
	return exitOK
}

func writeReport(w io.Writer, rep *sim.ExploreReport, show int) {
	p := rep.Params
	hb := "none"
	if p.Heartbeat > 0 {
		hb = sim.FormatTime(p.Heartbeat)
	}
	names := make([]string, len(rep.Tallies))
	for i, t := range rep.Tallies {
		names[i] = t.Storage.String()
	}
	fmt.Fprintf(w, "explore: %d random schedules from seed %d, each run with storage %s\n", p.Runs, p.Seed, strings.Join(names, ", "))
	fmt.Fprintf(w, "  %d clients x %d jobs x %d writes; TTL %s, heartbeat %s; steps ~%s; delays up to %s;\n",
		p.Clients, p.Jobs, p.Writes, sim.FormatTime(p.TTL), hb, sim.FormatTime(p.Work), sim.FormatTime(p.DelayMax))
	fmt.Fprintf(w, "  pause chance %g (up to %s), crash chance %g, clock drift up to ±%g%%\n",
		p.PauseProb, sim.FormatTime(p.PauseMax), p.CrashProb, p.DriftMax*100)
	fmt.Fprintf(w, "  schedules with a pause longer than the TTL: %d\n", rep.LongPauses)
	for _, warn := range p.Warnings() {
		fmt.Fprintf(w, "  WARNING: %s\n", warn)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-50s", "storage:")
	for _, n := range names {
		fmt.Fprintf(w, " %16s", n)
	}
	fmt.Fprintln(w)
	row := func(name string, v func(t *sim.Tally) string) {
		fmt.Fprintf(w, "  %-50s", name)
		for i := range rep.Tallies {
			fmt.Fprintf(w, " %16s", v(&rep.Tallies[i]))
		}
		fmt.Fprintln(w)
	}
	count := func(f func(t *sim.Tally) int) func(t *sim.Tally) string {
		return func(t *sim.Tally) string { return fmt.Sprint(f(t)) }
	}
	row("runs where tokens went backwards (*)", count(func(t *sim.Tally) int { return t.Violations }))
	row("runs that lost an accepted write", count(func(t *sim.Tally) int { return t.LostRuns }))
	row("runs that accepted a write on an expired lease (†)", count(func(t *sim.Tally) int { return t.StaleRuns }))
	row("writes decided by the storage (‡)", count(func(t *sim.Tally) int { return t.Writes }))
	row("writes rejected as stale", count(func(t *sim.Tally) int { return t.Rejected }))
	row("runs with a crashed holder's lease (downtime)", count(func(t *sim.Tally) int { return t.DowntimeRuns }))
	row("mean downtime in those runs", func(t *sim.Tally) string {
		if t.DowntimeRuns == 0 {
			return "-"
		}
		return sim.FormatTime(t.Downtime / time.Duration(t.DowntimeRuns))
	})
	if slices.ContainsFunc(rep.Tallies, func(t sim.Tally) bool { return t.CutRuns > 0 }) {
		row("runs cut at their horizon (counts incomplete)", count(func(t *sim.Tally) int { return t.CutRuns }))
	}
	fmt.Fprintln(w, "  (*) the storage accepted a write whose token was older than one it had already accepted")
	fmt.Fprintln(w, "  (†) the write check accepts a late write only while the storage has seen no newer token: the rule allows it")
	fmt.Fprintln(w, "  (‡) same pauses and crashes; a refused client ends its job early, so later delays differ")
	for _, t := range rep.Tallies {
		if len(t.Seeds) == 0 {
			continue
		}
		n := min(show, len(t.Seeds))
		seeds := make([]string, n)
		for i, s := range t.Seeds[:n] {
			seeds[i] = fmt.Sprint(s)
		}
		more := ""
		if len(t.Seeds) > n {
			more = fmt.Sprintf(" ... (%d more)", len(t.Seeds)-n)
		}
		fmt.Fprintf(w, "\nseeds where tokens went backwards, storage %s: %s%s\n", t.Storage, strings.Join(seeds, " "), more)
		if n > 0 {
			fmt.Fprintf(w, "replay one with: %s replay -seed %s -fencing %s,claim%s\n", runFromRepo, seeds[0], t.Storage, replayFlags(p))
		}
	}
	if on := rep.Tally(sim.StorageClaim); on != nil && on.Violations == 0 && on.LostRuns == 0 {
		caveat := ""
		if len(p.Warnings()) > 0 {
			caveat = " But see the WARNING above: these schedules rarely or never put fencing to the test."
		}
		fmt.Fprintf(w, "\nOK: with fencing on (claim), no violation and no lost write in %d runs.%s\n", p.Runs, caveat)
	}
}

// runFromRepo is how a hint names fencesim: the lesson's command, which
// runs in a checkout without installing anything.
const runFromRepo = "go run ./cmd/fencesim"

// replayFlags returns the distribution flags that differ from the
// defaults, so a printed replay command reproduces the schedule.
func replayFlags(p sim.ExploreParams) string {
	d := sim.DefaultExploreParams()
	var b strings.Builder
	add := func(name string, differ bool, v any) {
		if differ {
			fmt.Fprintf(&b, " -%s %v", name, v)
		}
	}
	add("clients", p.Clients != d.Clients, p.Clients)
	add("jobs", p.Jobs != d.Jobs, p.Jobs)
	add("writes", p.Writes != d.Writes, p.Writes)
	add("ttl", p.TTL != d.TTL, p.TTL)
	add("heartbeat", p.Heartbeat != d.Heartbeat, p.Heartbeat)
	add("work", p.Work != d.Work, p.Work)
	add("delay", p.DelayMax != d.DelayMax, p.DelayMax)
	add("pause-prob", p.PauseProb != d.PauseProb, p.PauseProb)
	add("pause-max", p.PauseMax != d.PauseMax, p.PauseMax)
	add("crash-prob", p.CrashProb != d.CrashProb, p.CrashProb)
	add("drift", p.DriftMax != d.DriftMax, p.DriftMax)
	return b.String()
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencesim replay", flag.ContinueOnError)
	var p sim.ExploreParams
	exploreFlags(fs, &p)
	var out output
	out.register(fs, true)
	if status := parseNoArgs(fs, "fencesim replay -seed N [flags]  (replays one schedule of fencesim explore)", args, stdout, stderr); status >= 0 {
		return status
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		return usageErr(stderr, "replay needs -seed N (a seed that fencesim explore listed)")
	}
	storages, err := out.fencing.storages([]sim.Storage{sim.StorageOff, sim.StorageClaim})
	if err != nil {
		return usageErr(stderr, "-fencing %v", err)
	}
	var runs []*sim.Result
	for _, st := range storages {
		cfg, err := sim.ExploreSchedule(p, p.Seed, st)
		if err != nil {
			return usageErr(stderr, "%s", strings.TrimPrefix(err.Error(), "sim: "))
		}
		res, err := sim.Run(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\n", err)
			return exitFailed
		}
		runs = append(runs, res)
	}
	return out.emit(fmt.Sprintf("fencesim replay: explore schedule seed=%d", p.Seed), runs, stdout, stderr)
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
