package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // an invariant failed (a violation with fencing on) or output failed
	exitUsage  = 2 // bad arguments
	usageIntro = "usage: fencesim [SCENARIO] [flags] | fencesim SUBCOMMAND [flags]  ('fencesim help' lists them)"
)

// subcommand is a word fencesim takes instead of a scenario name.
type subcommand struct {
	name, usage, what string
	run               func(args []string, stdout, stderr io.Writer) int
}

// subcommands lists every subcommand; `fencesim -h` and `fencesim help`
// print the list.
var subcommands = []subcommand{
	{"explore", "fencesim explore [flags]", "run many random schedules per storage mode and count what went wrong", runExplore},
	{"replay", "fencesim replay -seed N [flags]", "replay one schedule of explore as a timeline", runReplay},
	{"sweep", "fencesim sweep [flags]", "run explore over a grid (pause/TTL, heartbeat/TTL, drift): CSV or JSON, and the violation map as SVG", runSweep},
	{"list", "fencesim list", "list the scenarios and their defaults", runList},
}

// run is the whole command: it parses args, writes results to stdout and
// diagnostics to stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if args[0] == "help" {
			writeUsage(stdout)
			return exitOK
		}
		for _, sc := range subcommands {
			if sc.name == args[0] {
				return sc.run(args[1:], stdout, stderr)
			}
		}
	}
	return runScenario(args, stdout, stderr)
}

// writeUsage prints how to run a scenario and every subcommand.
func writeUsage(w io.Writer) {
	line := func(usage, what string) { fmt.Fprintf(w, "  %-34s %s\n", usage, what) }
	fmt.Fprintln(w, "usage: fencesim [SCENARIO] [flags] | fencesim SUBCOMMAND [flags]")
	line("fencesim [SCENARIO] [flags]", "replay a scenario, fencing off and on side by side (make demo)")
	for _, sc := range subcommands {
		line(sc.usage, sc.what)
	}
	line("fencesim help", "print this list")
	fmt.Fprintf(w, "Scenarios: %s (default kleppmann).\n", strings.Join(sim.ScenarioNames(), ", "))
	fmt.Fprintln(w, "Run 'fencesim -h' or 'fencesim SUBCOMMAND -h' for the flags.")
}

// usageErr prints a one-line diagnostic and the usage line, and returns 2.
func usageErr(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "fencesim: "+format+"\n", args...)
	fmt.Fprintln(stderr, usageIntro)
	return exitUsage
}

// parse parses fs over args, allowing one positional word (the scenario
// name) before, between or after the flags. It returns the word ("" if
// none) and the exit status to return, or -1 to go on.
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (word string, status int) {
	fs.SetOutput(stderr)
	rest := args
	for range 3 { // name first, name between flags, name last: at most two words seen
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", exitOK
			}
			return "", exitUsage // flag has printed the error and the defaults
		}
		if fs.NArg() == 0 {
			return word, -1
		}
		if word != "" {
			return "", usageErr(stderr, "unexpected argument %q after %q", fs.Arg(0), word)
		}
		word = fs.Arg(0)
		rest = fs.Args()[1:]
	}
	return word, -1
}

// parseNoArgs sets fs's usage line, parses args and refuses positional
// arguments. It returns the exit status to return, or -1 to go on.
func parseNoArgs(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) int {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: "+usage)
		fs.PrintDefaults()
	}
	word, status := parse(fs, args, stdout, stderr)
	if status >= 0 {
		return status
	}
	if word != "" {
		return usageErr(stderr, "%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), "fencesim "), word)
	}
	return -1
}

// output holds the output flags shared by scenario and replay.
type output struct {
	json    bool
	html    string
	fencing fencingMode
}

// register adds -json, -html and, when fencing is true, -fencing to fs.
func (o *output) register(fs *flag.FlagSet, fencing bool) {
	o.fencing = "both"
	fs.BoolVar(&o.json, "json", false, "print the events as JSON Lines instead of the timeline")
	fs.StringVar(&o.html, "html", "", "also write a self-contained HTML page with the timeline drawn as SVG to `FILE`")
	if fencing {
		fs.Var(&o.fencing, "fencing", "storage `MODES`, side by side, separated by commas: off (no check), writes (the write check only), "+
			"claim or on (write check + claim, fencekit's), check-then-write (a non-atomic check); both = the scenario's comparison, usually off,claim")
	}
}

// emit writes runs as a terminal timeline (or JSON) and the HTML page.
func (o *output) emit(title string, runs []*sim.Result, stdout, stderr io.Writer) int {
	var err error
	if o.json {
		err = render.JSON(stdout, runs...)
	} else if len(runs) > 1 && len(runs[0].Clients) > 2 {
		for _, r := range runs { // too wide for side by side
			if err = render.Text(stdout, title, r); err != nil {
				break
			}
			fmt.Fprintln(stdout)
		}
	} else {
		err = render.Text(stdout, title, runs...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencesim: writing output: %v\n", err)
		return exitFailed
	}
	if o.html != "" {
		if err := writeHTMLFile(o.html, title, runs); err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stderr, "fencesim: wrote %s\n", o.html)
	}
	return exitOK
}

func writeHTMLFile(path, title string, runs []*sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if err := render.HTML(f, title, runs...); err != nil {
		f.Close()
		return fmt.Errorf("html: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("html: closing %s: %w", path, err)
	}
	return nil
}

func runScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencesim", flag.ContinueOnError)
	var p sim.Params
	fs.Var(durationValue{&p.TTL}, "ttl", "lease time to live (default: the scenario's, 10s for kleppmann)")
	fs.Var(durationValue{&p.Heartbeat}, "heartbeat", "heartbeat interval, 0 for none (default: the scenario's)")
	fs.Var(durationValue{&p.Pause}, "pause", "length of the holder's stop-the-world pause (default: the scenario's)")
	fs.Var(durationValue{&p.PauseAt}, "pause-at", "when the holder pauses, counted from the start of its work step, i.e. its lease check (default: the scenario's; kleppmann: 2s, the end of the step)")
	fs.Var(durationValue{&p.WriteDelay}, "write-delay", "extra network delay of the holder's write: sent in time, it arrives late (kleppmann only)")
	fs.Var(durationValue{&p.Work}, "work", "length of a work step before a write (default: the scenario's)")
	fs.Var(durationValue{&p.Delay}, "delay", "one-way message delay (default: the scenario's, 100ms in all)")
	fs.Float64Var(&p.Drift, "drift", 0, "holder's clock rate error, -0.5 = half speed (drift scenario only; default -0.5)")
	fs.Uint64Var(&p.Seed, "seed", 1, "seed of the run's random source (wait jitter)")
	var out output
	out.register(fs, true)
	fs.Usage = func() {
		writeUsage(fs.Output())
		fmt.Fprintln(fs.Output(), "\nFlags of a scenario:")
		fs.PrintDefaults()
	}
	name, status := parse(fs, args, stdout, stderr)
	if status >= 0 {
		return status
	}
	if name == "" {
		name = "kleppmann"
	}
	sc, err := sim.Lookup(name)
	if err != nil {
		return usageErr(stderr, "%s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	q, err := override(fs, sc, p)
	if err != nil {
		return usageErr(stderr, "%s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	storages, err := out.fencing.storages(sc.Storages())
	if err != nil {
		return usageErr(stderr, "-fencing %v", err)
	}
	var runs []*sim.Result
	for _, st := range storages {
		q.Storage = st
		res, err := sc.Run(q)
		if err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\n", err)
			return exitFailed
		}
		runs = append(runs, res)
	}
	title := fmt.Sprintf("fencesim %s: %s", sc.Name, sc.Title)
	if !out.json {
		story := sc.Story(q)
		if tip, d := sc.Tip(), sc.Defaults; tip != "" && q.TTL == d.TTL && q.Heartbeat == d.Heartbeat && q.Pause == d.Pause &&
			q.PauseAt == d.PauseAt && q.Work == d.Work && q.Delay == d.Delay && q.WriteDelay == d.WriteDelay && q.Drift == d.Drift {
			story += " " + tip // only on the scenario's own numbers: the tip's runs are not those
		}
		fmt.Fprintln(stdout, wrap(story, 100))
		fmt.Fprintln(stdout)
	}
	return out.emit(title, runs, stdout, stderr)
}

// override returns sc's defaults with the knobs the user set in fs (read
// into p) replacing them. It refuses a knob the scenario does not use,
// naming the scenarios that do, and invalid values.
func override(fs *flag.FlagSet, sc sim.Scenario, p sim.Params) (sim.Params, error) {
	q := sc.Defaults
	q.Seed = p.Seed
	durations := map[string][2]*time.Duration{"ttl": {&q.TTL, &p.TTL}, "heartbeat": {&q.Heartbeat, &p.Heartbeat},
		"pause": {&q.Pause, &p.Pause}, "pause-at": {&q.PauseAt, &p.PauseAt}, "work": {&q.Work, &p.Work}, "delay": {&q.Delay, &p.Delay},
		"write-delay": {&q.WriteDelay, &p.WriteDelay}}
	var ignored []string
	fs.Visit(func(f *flag.Flag) {
		if d, ok := durations[f.Name]; ok {
			*d[0] = *d[1]
		}
		if f.Name == "drift" {
			q.Drift = p.Drift
		}
		if _, knob := durations[f.Name]; (knob || f.Name == "drift") && !sc.Uses(f.Name) {
			ignored = append(ignored, f.Name)
		}
	})
	if len(ignored) > 0 {
		return q, fmt.Errorf("scenario %s has no -%s (%s)", sc.Name, ignored[0], usersOf(ignored[0]))
	}
	return q, q.Validate()
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(w) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// usersOf says which scenarios use the knob called name.
func usersOf(name string) string {
	var users []string
	for _, sc := range sim.Scenarios() {
		if sc.Uses(name) {
			users = append(users, sc.Name)
		}
	}
	return "-" + name + " applies to " + strings.Join(users, ", ")
}

func runList(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return usageErr(stderr, "list takes no arguments, got %q", args[0])
	}
	for _, sc := range sim.Scenarios() {
		d := sc.Defaults
		fmt.Fprintf(stdout, "%s\n  %s\n  flags: -ttl %s -heartbeat %s", sc.Name, sc.Title, sim.FormatTime(d.TTL), sim.FormatTime(d.Heartbeat))
		for _, k := range []struct {
			name, value string
		}{{"pause", sim.FormatTime(d.Pause)}, {"pause-at", sim.FormatTime(d.PauseAt)}, {"work", sim.FormatTime(d.Work)}, {"drift", fmt.Sprint(d.Drift)}} {
			if sc.Uses(k.name) {
				fmt.Fprintf(stdout, " -%s %s", k.name, k.value)
			}
		}
		fmt.Fprintf(stdout, " -delay %s", sim.FormatTime(d.Delay))
		if len(sc.Compare) > 0 {
			names := make([]string, len(sc.Compare))
			for i, st := range sc.Compare {
				names[i] = st.String()
			}
			fmt.Fprintf(stdout, " -fencing %s", strings.Join(names, ","))
		}
		fmt.Fprintln(stdout)
	}
	return exitOK
}
