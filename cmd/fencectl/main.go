// Command fencectl inspects and repairs fencekit's leases and fences: who
// holds a lease, its events as they happen, a forced release of a stuck
// holder, raising a token counter after Redis lost data, PostgreSQL guard
// rows and an S3 compatibility probe. docs/operations.md is the runbook.
//
//	fencectl status NAME...              holder token and identity, remaining TTL, last token
//	fencectl list [PATTERN]              the same for every lease whose name matches
//	fencectl watch NAME                  one line per grant, release and expiry
//	fencectl release --force NAME        end a stuck lease
//	fencectl bump NAME (--to TOKEN | --time)
//	                                     raise the token counter, never lower it
//	fencectl pg-status [RESOURCE...]     PostgreSQL guard rows
//	fencectl s3-check -bucket BUCKET     does the S3 server honour conditional writes?
//
// The lease commands take -backend (redis, postgres, ...; one file per
// backend, reading leases through its issuer package). Every command takes
// -json. Connection flags default to FENCECTL_REDIS (else 127.0.0.1:6379),
// FENCECTL_POSTGRES (else libpq's PG* variables), ETCDCTL_ENDPOINTS (else
// http://127.0.0.1:2379), FENCECTL_ZOOKEEPER (else 127.0.0.1:2181); S3 takes
// the AWS SDK's configuration (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...).
//
// Exit status: 0 done, 1 failed, 2 usage error (nothing was sent).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencekit/fencekit/internal/leasearg"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// command is one sub-command: its flags are added to fs by setup, which
// returns the function to run with the positional arguments.
type command struct {
	args  string // synopsis of the arguments, for usage
	about string
	setup func(fs *flag.FlagSet, o *output) func(ctx context.Context, args []string) error
}

var commands = map[string]command{
	"status":    {"NAME...", "show who holds each lease: holder token, remaining TTL, last token issued", setupStatus},
	"list":      {"[PATTERN]", "status of every lease whose name matches the glob PATTERN (default *)", setupList},
	"watch":     {"NAME", "print one line per grant, release and expiry of a lease until interrupted", setupWatch},
	"release":   {"--force NAME", "end a stuck lease now; its holder sees it gone at its next renewal", setupRelease},
	"bump":      {"NAME (--to TOKEN | --time)", "raise a lease's token counter (after the store lost data or a clock was wrong); never lowers it", setupBump},
	"pg-status": {"[RESOURCE...]", "show PostgreSQL guard rows: resource, token, updated_at (all rows without arguments)", setupPGStatus},
	"s3-check":  {"-bucket BUCKET", "check on a scratch key that the S3 server honours the conditional writes fencing needs", setupS3Check},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is bad input: exit status 2, nothing was sent.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		printUsage(stdout)
		return exitOK
	}
	cmd, ok := commands[name]
	if !ok && strings.HasPrefix(name, "-") {
		for i, a := range args {
			if _, ok := commands[a]; ok {
				line := append(append([]string{a}, args[:i]...), args[i+1:]...)
				fmt.Fprintf(stderr, "fencectl: flags go after the command: fencectl %s\n", strings.Join(line, " "))
				return exitUsage
			}
		}
	}
	if !ok {
		fmt.Fprintf(stderr, "fencectl: unknown command %q\n\n", name)
		printUsage(stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet("fencectl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := &output{w: stdout, errs: stderr}
	fs.BoolVar(&o.json, "json", false, "print JSON instead of text")
	runCmd := cmd.setup(fs, o)
	usage := func() {
		fmt.Fprintf(stderr, "usage: fencectl %s %s\n  %s\n\nflags:\n", name, cmd.args, cmd.about)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fs.Usage = func() {} // the flag package would print it on every parse error; printed once below
	pos, err := parseArgs(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return exitOK
	}
	if err == nil {
		err = runCmd(ctx, pos)
	}
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		// The cause, then one line of usage: the flag list would bury it.
		fmt.Fprintf(stderr, "fencectl %s: %v\nusage: fencectl %s %s (fencectl %s -h lists the flags)\n", name, err, name, cmd.args, name)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "fencectl %s: %v\n", name, explainPG(err))
		return exitFailed
	}
}

// explainPG adds what to do to a missing-table error of any command.
func explainPG(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return fmt.Errorf("%w: fencekit's tables are not in this database's search_path: apply fencekit's migrations (migrations.Up from Go, or the SQL files in fencekit's migrations folder), or point -postgres at the right database and search_path", err)
	}
	return err
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: fencectl COMMAND [flags] [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-10s %s\n             %s\n", n, c.args, c.about)
	}
	fmt.Fprintln(w, "\nEvery command takes -json; `fencectl COMMAND -h` lists its flags.")
	fmt.Fprintln(w, "Exit status: 0 done, 1 failed, 2 usage error.")
}

// needArgs checks the number of positional arguments.
func needArgs(args []string, min, max int, what string) error {
	switch {
	case len(args) < min:
		return usagef("missing %s", what)
	case max >= 0 && len(args) > max:
		return usagef("unexpected argument %q", strings.Join(args[max:], " "))
	}
	return nil
}

// oneName checks that args is one valid lease name and returns it.
func oneName(args []string) (string, error) {
	if err := needArgs(args, 1, 1, "lease NAME"); err != nil {
		return "", err
	}
	if err := leasearg.Name(args[0]); err != nil {
		return "", usagef("%v", err)
	}
	return args[0], nil
}
