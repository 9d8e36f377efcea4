package main

import (
	"context"
	"flag"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// leaseStatus is one lease's line of status and list.
type leaseStatus struct {
	Name        string `json:"name"`
	Held        bool   `json:"held"`
	Holder      uint64 `json:"holder"`       // the holder's token, 0 when free or not written by fencekit
	RemainingMS int64  `json:"remaining_ms"` // 0 when free, -1 when the key has no expiry
	Last        uint64 `json:"last"`         // the last token issued, 0 when none
}

func setupStatus(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	rf := addRedisFlags(fs)
	return func(ctx context.Context, args []string) error {
		if err := needArgs(args, 1, -1, "lease NAME"); err != nil {
			return err
		}
		for _, n := range args {
			if err := lease.ValidateName(n); err != nil {
				return usagef("%v", err)
			}
		}
		return printStatus(ctx, rf, o, func(*redisConn) ([]string, error) { return args, nil })
	}
}

func setupList(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	rf := addRedisFlags(fs)
	return func(ctx context.Context, args []string) error {
		if err := needArgs(args, 0, 1, ""); err != nil {
			return err
		}
		pattern := "*"
		if len(args) == 1 {
			pattern = args[0]
		}
		if pattern == "" || strings.ContainsAny(pattern, "{}") {
			return usagef("PATTERN %q: want a non-empty glob without braces (lease names have none)", pattern)
		}
		return printStatus(ctx, rf, o, func(c *redisConn) ([]string, error) { return c.names(ctx, pattern) })
	}
}

// printStatus inspects the leases names returns, one round trip each.
func printStatus(ctx context.Context, rf *redisFlags, o *output, names func(*redisConn) ([]string, error)) error {
	c, err := rf.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	list, err := names(c)
	if err != nil {
		return err
	}
	out := make([]leaseStatus, 0, len(list))
	rows := make([][]string, 0, len(list))
	for _, n := range list {
		info, err := c.inspect(ctx, n)
		if err != nil {
			return err
		}
		s := leaseStatus{Name: n, Held: info.Held, Holder: uint64(info.Holder), Last: uint64(info.Last)}
		if info.Held {
			s.RemainingMS = ms(info.Remaining)
			if info.Remaining < 0 {
				s.RemainingMS = -1
			}
		}
		out = append(out, s)
		rows = append(rows, []string{n, yesNo(info.Held), tokenText(info.Holder), remaining(info.Held, info.Remaining), tokenText(info.Last)})
	}
	if o.json {
		return o.encode(out)
	}
	return o.table([]string{"NAME", "HELD", "HOLDER", "REMAINING", "LAST"}, rows)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// tokenText shows a token, "-" for none.
func tokenText(t fence.Token) string {
	if t == 0 {
		return "-"
	}
	return t.String()
}
