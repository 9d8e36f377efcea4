package main

import (
	"context"
	"errors"
	"flag"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/lease"
)

// leaseStatus is one lease's line of status and list.
type leaseStatus struct {
	Name        string `json:"name"`
	Held        bool   `json:"held"`
	Holder      uint64 `json:"holder"`       // the holder's token, 0 when free or not written by fencekit
	Identity    string `json:"identity"`     // the holder's lease.Options.Identity, "" when free or unknown
	RemainingMS int64  `json:"remaining_ms"` // 0 when free, -1 when the key has no expiry
	Last        uint64 `json:"last"`         // the last token issued, 0 when none
}

func setupStatus(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	sf := addStoreFlags(fs)
	return func(ctx context.Context, args []string) error {
		if err := needArgs(args, 1, -1, "lease NAME"); err != nil {
			return err
		}
		for _, n := range args {
			if err := leasearg.Name(n); err != nil {
				return usagef("%v", err)
			}
		}
		return printStatus(ctx, sf, o, func(*store) ([]string, error) { return args, nil })
	}
}

func setupList(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	sf := addStoreFlags(fs)
	return func(ctx context.Context, args []string) error {
		if err := needArgs(args, 0, 1, ""); err != nil {
			return err
		}
		pattern := "*"
		if len(args) == 1 {
			pattern = args[0]
		}
		if err := leasearg.Pattern(pattern); err != nil {
			return usagef("PATTERN: %v", err)
		}
		return printStatus(ctx, sf, o, func(s *store) ([]string, error) {
			nctx, cancel := context.WithTimeout(ctx, *sf.timeout)
			defer cancel()
			names, err := s.leases.Names(nctx, pattern)
			if errors.Is(err, lease.ErrInvalid) { // a pattern the issuer cannot read (etcd: "[a")
				return nil, usagef("PATTERN: %v", err)
			}
			return names, err
		})
	}
}

// printStatus inspects the leases names returns, one round trip each.
func printStatus(ctx context.Context, sf *storeFlags, o *output, names func(*store) ([]string, error)) error {
	s, err := sf.open()
	if err != nil {
		return err
	}
	defer s.close()
	list, err := names(s)
	if err != nil {
		return err
	}
	out := make([]leaseStatus, 0, len(list))
	rows := make([][]string, 0, len(list))
	for _, n := range list {
		info, err := inspect(ctx, s, *sf.timeout, n)
		if err != nil {
			return err
		}
		st := leaseStatus{Name: n, Held: info.Held, Holder: uint64(info.Holder), Identity: info.Identity, Last: uint64(info.Last)}
		if info.Held {
			st.RemainingMS = ms(info.Remaining)
			if info.Remaining < 0 {
				st.RemainingMS = -1
			}
		}
		out = append(out, st)
		rows = append(rows, []string{n, heldText(info), tokenText(info.Holder), orDash(info.Identity), remaining(info.Held, info.Remaining), tokenText(info.Last)})
	}
	if o.json {
		return o.encode(out)
	}
	return o.table([]string{"NAME", "HELD", "HOLDER", "IDENTITY", "REMAINING", "LAST"}, rows)
}

// heldText is status's HELD column: yes, no, or never (no token was ever
// issued for the name).
func heldText(info lease.Info) string {
	switch {
	case info.Held:
		return "yes"
	case info.Last == 0:
		return "never"
	}
	return "no"
}

// orDash shows s, "-" for "".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tokenText shows a token, "-" for none.
func tokenText(t fence.Token) string {
	if t == 0 {
		return "-"
	}
	return t.String()
}
