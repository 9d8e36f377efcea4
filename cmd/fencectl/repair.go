package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// releaseResult is what release --force did.
type releaseResult struct {
	Name        string `json:"name"`
	Released    bool   `json:"released"`
	Held        bool   `json:"-"`            // the lease was held (else nothing was done)
	Holder      uint64 `json:"holder"`       // the holder's token (0: not written by fencekit, or no holder)
	Identity    string `json:"identity"`     // the holder's lease.Options.Identity ("" unknown)
	RemainingMS int64  `json:"remaining_ms"` // its TTL when deleted (-1: no expiry)
}

func setupRelease(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	sf := addStoreFlags(fs)
	force := fs.Bool("force", false, "required: end the lease whoever holds it")
	only := fs.String("token", "", "release only if the holder's token is this one (guards against ending a newer holder)")
	return func(ctx context.Context, args []string) error {
		name, err := oneName(args)
		if err != nil {
			return err
		}
		if !*force {
			return usagef("release ends another process's lease: add --force to do it")
		}
		var want fence.Token
		if *only != "" {
			if want, err = valid.ParseToken(*only); err != nil {
				return usagef("--token: %v", err)
			}
		}
		s, err := sf.open()
		if err != nil {
			return err
		}
		defer s.close()
		rctx, cancel := context.WithTimeout(ctx, *sf.timeout)
		info, err := s.leases.ForceRelease(rctx, name, want)
		cancel()
		if err != nil {
			return err // it names the lease
		}
		r := releaseResult{Name: name, Released: info.Held && (want == 0 || info.Holder == want), Held: info.Held,
			Holder: uint64(info.Holder), Identity: info.Identity, RemainingMS: max(ms(info.Remaining), -1)}
		holder := tokenText(fence.Token(r.Holder))
		if r.Identity != "" {
			holder += " (" + r.Identity + ")"
		}
		switch {
		case !r.Held:
			return o.value(r, fmt.Sprintf("%s is not held: nothing to release\n", name))
		case !r.Released:
			return fmt.Errorf("%s is held by token %s, not %s: nothing released", name, holder, *only)
		}
		return o.value(r, fmt.Sprintf("released %s: ended the grant of token %s (%s left). Its holder sees the lease gone at its next renewal, within its renew interval, and its Context ends with lease.ErrLost; fenced storage refuses its token once a newer holder has written.\n",
			name, holder, remaining(true, time.Duration(r.RemainingMS)*time.Millisecond)))
	}
}

// bumpResult is what bump did.
type bumpResult struct {
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	Before  uint64 `json:"before"` // the counter before, 0 when absent
	After   uint64 `json:"after"`  // the counter now
	Target  uint64 `json:"target"`
}

func setupBump(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	sf := addStoreFlags(fs)
	fs.Lookup("backend").Usage = "the lease issuer: redis, postgres, postgres-advisory, zookeeper (etcd's tokens are revisions: they cannot be raised)"
	to := fs.String("to", "", "raise the counter to this token (pg-status shows the storage's); at most "+leasearg.MaxAhead.String()+" ahead of the server's clock")
	now := fs.Bool("time", false, "raise the counter to this machine's clock in microseconds: after a loss, the recovery that is always safe")
	return func(ctx context.Context, args []string) error {
		name, err := oneName(args)
		if err != nil {
			return err
		}
		var target uint64
		switch {
		case (*to == "") == !*now:
			return usagef("give one of --to TOKEN or --time")
		case *now:
			target = uint64(time.Now().UnixMicro())
		default:
			var err error
			if target, err = parseTarget(*to); err != nil {
				return err
			}
		}
		s, err := sf.open()
		if err != nil {
			return err
		}
		defer s.close()
		bctx, cancel := context.WithTimeout(ctx, *sf.timeout)
		defer cancel()
		before, after, err := s.leases.Bump(bctx, name, fence.Token(target))
		if errors.Is(err, lease.ErrUnsupported) { // etcd: a usage error, nothing changed
			return usagef("bump on -backend %s: %v", *sf.backend, err)
		}
		if err != nil {
			return err // it names the lease
		}
		r := bumpResult{Name: name, Changed: after != before, Before: uint64(before), After: uint64(after), Target: target}
		text := fmt.Sprintf("bumped %s: token counter %s -> %d; the next grant's token is above %d\n", name, tokenText(fence.Token(r.Before)), r.After, r.After)
		if !r.Changed {
			text = fmt.Sprintf("%s unchanged: its token counter %d is already at or above %d (bump never lowers it)\n", name, r.Before, target)
		}
		return o.value(r, text)
	}
}
