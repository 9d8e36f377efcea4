package main

import (
	"errors"
	"flag"
	"os"
	"strings"
	"time"

	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
)

// parseArgs parses args with fs, flags and positional arguments in any
// order ("bump NAME --to 5" as well as "bump --to 5 NAME"), and returns the
// positional arguments in order. Everything after "--" is positional.
// Errors: flag.ErrHelp for -h, a *usageError for anything else wrong.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" && !flagValue(fs, args[:used-1]) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagValue reports whether the last of args is a flag that takes the next
// argument as its value ("-prefix" followed by "--": "--" is its value,
// not the end of the flags).
func flagValue(fs *flag.FlagSet, args []string) bool {
	if len(args) == 0 {
		return false
	}
	last := args[len(args)-1]
	if len(last) < 2 || last[0] != '-' || strings.Contains(last, "=") {
		return false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(last, "-"), "-")
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// envOr returns the environment variable's value, or def when it is unset
// or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Connection defaults: fencectl's own variables, else the servers' usual
// local addresses. With neither -postgres nor FENCECTL_POSTGRES, pgx reads
// libpq's PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE (and their
// defaults: the local socket, the OS user).
const (
	envRedisAddr    = "FENCECTL_REDIS"
	envPostgresURL  = "FENCECTL_POSTGRES"
	defRedisAddr    = "127.0.0.1:6379"
	defPostgresURL  = ""
	defTimeout      = 5 * time.Second
	defWatchPolling = 100 * time.Millisecond
)

// timeoutFlag adds -timeout, the bound of each request.
func timeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("timeout", defTimeout, "bound of each request to a server")
}

// parseTarget parses bump's --to: a token (valid.ParseToken) up to
// leasearg.MaxBump, the largest lease.Client.Bump accepts.
func parseTarget(s string) (uint64, error) {
	tok, err := valid.ParseToken(s)
	switch {
	case err != nil:
		return 0, usagef("--to: %v", err)
	case uint64(tok) > leasearg.MaxBump:
		return 0, usagef("--to %d is out of range: 1 to %d (the largest token every issuer keeps)", tok, leasearg.MaxBump)
	}
	return uint64(tok), nil
}
