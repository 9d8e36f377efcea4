// Command fencereal replays Kleppmann's scenario against the real packages
// and servers: client A is a child process holding a Redis lease, stopped
// with SIGSTOP for longer than the lease's TTL; client B takes the lease
// over and writes; A resumes and sends its late writes to PostgreSQL
// (sqlfence guard row and lock_version row) and S3 (blobfence). Each store
// must refuse A's writes and keep B's data.
//
// Usage:
//
//	fencereal [-ttl D] [-pause D] [-redis ADDR] [-postgres URL] [-s3-endpoint URL]
//	          [-s3-access KEY] [-s3-secret KEY] [-s3-bucket B] [-name N] [-json] [-html FILE]
//
// The output is the simulator's timeline (or its JSON Lines), so it reads
// like `fencesim`'s. It lives apart from fencesim so that `make demo`
// compiles only the simulator. Bad flags exit with status 2; a store that
// accepted a stale write, or a server that failed, exits with status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	if os.Getenv(holderEnv) != "" { // the paused holder, client A
		os.Exit(holderMain())
	}
	os.Exit(runReal(os.Args[1:], os.Stdout, os.Stderr))
}

// usageErr prints a diagnostic and the usage line, and returns 2.
func usageErr(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "fencereal: "+format+"\n", args...)
	fmt.Fprintln(stderr, "usage: fencereal [flags]  ('fencereal -h' lists them)")
	return exitUsage
}

// parseFlags parses args into fs and refuses positional arguments. It
// returns the exit status to return, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // flag has printed the error and the defaults
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "fencereal takes no arguments, got %q", fs.Arg(0))
	}
	return -1
}

// durationFlag sets *d from a duration with a unit, such as 500ms or 2s.
func durationFlag(d *time.Duration) func(string) error {
	return func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration with a unit, such as 500ms or 2s", s)
		}
		*d = v
		return nil
	}
}

// output is the -json and -html flags.
type output struct {
	json bool
	html string
}

func (o *output) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print the events as JSON Lines instead of the timeline")
	fs.StringVar(&o.html, "html", "", "also write a self-contained HTML page with the timeline drawn as SVG to `FILE`")
}

// emit writes the run as a terminal timeline (or JSON) and the HTML page.
func (o *output) emit(title string, res *sim.Result, stdout, stderr io.Writer) int {
	var err error
	if o.json {
		err = render.JSON(stdout, res)
	} else {
		err = render.Text(stdout, title, res)
	}
	if err == nil && o.html != "" {
		err = writeHTML(o.html, title, res)
		if err == nil {
			fmt.Fprintf(stderr, "fencereal: wrote %s\n", o.html)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencereal: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func writeHTML(path, title string, res *sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if err := render.HTML(f, title, res); err != nil {
		f.Close()
		return fmt.Errorf("html: writing %s: %w", path, err)
	}
	return f.Close()
}
