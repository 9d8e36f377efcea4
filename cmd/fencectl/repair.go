package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
)

var (
	//go:embed forcerelease.lua
	forceReleaseSrc    string
	forceReleaseScript = redis.NewScript(forceReleaseSrc)
	//go:embed bump.lua
	bumpSrc    string
	bumpScript = redis.NewScript(bumpSrc)
)

// maxBump is the largest counter bump accepts: acquire.lua issues
// counter+1 and refuses a counter at or above 2^53-1 (Lua's doubles are
// exact up to 2^53).
const maxBump = 1<<53 - 2

// releaseResult is what release --force did.
type releaseResult struct {
	Name        string `json:"name"`
	Released    bool   `json:"released"`
	Holder      uint64 `json:"holder"`       // the holder's token (0: not written by fencekit, or no holder)
	Value       string `json:"value"`        // the lock key's value
	RemainingMS int64  `json:"remaining_ms"` // its TTL when deleted (-1: no expiry)
}

func setupRelease(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	rf := addRedisFlags(fs)
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
		if *only != "" {
			if _, err := fence.ParseToken(*only); err != nil {
				return usagef("--token: %v", err)
			}
		}
		c, err := rf.connect()
		if err != nil {
			return err
		}
		defer c.Close()
		var res []any
		err = c.call(ctx, func(ctx context.Context) (err error) {
			res, err = forceReleaseScript.Run(ctx, c.rdb, []string{c.key(name, suffixLock)}, c.key(name, suffixReleased), *only).Slice()
			return err
		})
		if err != nil {
			return fmt.Errorf("release %q: %w", name, err)
		}
		code, value, pttl, err := parseForceRelease(res)
		if err != nil {
			return fmt.Errorf("release %q: %w", name, err)
		}
		r := releaseResult{Name: name, Released: code == 1, Holder: uint64(holderToken(value)), Value: value, RemainingMS: max(pttl, -1)}
		switch code {
		case 0:
			return o.value(r, fmt.Sprintf("%s is not held: nothing to release\n", name))
		case -1:
			return fmt.Errorf("%s is held by token %s, not %s: nothing released", name, tokenText(holderToken(value)), *only)
		}
		return o.value(r, fmt.Sprintf("released %s: deleted the lock of token %s (%s left). Its holder sees the lease gone at its next renewal, within its renew interval, and its Context ends with lease.ErrLost; fenced storage refuses its token once a newer holder has written.\n",
			name, tokenText(holderToken(value)), remaining(true, time.Duration(pttl)*time.Millisecond)))
	}
}

func parseForceRelease(res []any) (code int64, value string, pttl int64, err error) {
	if len(res) == 3 {
		var ok1, ok2, ok3 bool
		code, ok1 = res[0].(int64)
		value, ok2 = res[1].(string)
		pttl, ok3 = res[2].(int64)
		if ok1 && ok2 && ok3 {
			return code, value, pttl, nil
		}
	}
	return 0, "", 0, fmt.Errorf("unexpected reply %v", res)
}

// holderToken returns the token of a lock key's value "<token>:<owner>",
// 0 for a value fencekit did not write.
func holderToken(v string) fence.Token {
	t, _, ok := strings.Cut(v, ":")
	tok, err := fence.ParseToken(t)
	if !ok || err != nil {
		return 0
	}
	return tok
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
	rf := addRedisFlags(fs)
	to := fs.String("to", "", "raise the counter to this token: the highest token your storage has seen (pg-status), or more")
	now := fs.Bool("time", false, "raise the counter to this machine's clock in microseconds (the next grant's token at the earliest)")
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
		c, err := rf.connect()
		if err != nil {
			return err
		}
		defer c.Close()
		var res []any
		err = c.call(ctx, func(ctx context.Context) (err error) {
			res, err = bumpScript.Run(ctx, c.rdb, []string{c.key(name, suffixCounter)}, strconv.FormatUint(target, 10)).Slice()
			return err
		})
		if err != nil {
			return fmt.Errorf("bump %q: %w", name, err)
		}
		r, err := parseBump(name, target, res)
		if err != nil {
			return fmt.Errorf("bump %q: %w", name, err)
		}
		text := fmt.Sprintf("bumped %s: token counter %s -> %d; the next grant's token is above %d\n", name, tokenText(fence.Token(r.Before)), r.After, r.After)
		if !r.Changed {
			text = fmt.Sprintf("%s unchanged: its token counter %d is already at or above %d (bump never lowers it)\n", name, r.Before, target)
		}
		return o.value(r, text)
	}
}

func parseBump(name string, target uint64, res []any) (bumpResult, error) {
	r := bumpResult{Name: name, Target: target}
	if len(res) == 2 {
		changed, ok1 := res[0].(int64)
		before, ok2 := res[1].(string)
		if ok1 && ok2 {
			if before != "" {
				b, err := strconv.ParseUint(before, 10, 64)
				if err != nil {
					return r, fmt.Errorf("token counter holds %q, not a token", before)
				}
				r.Before = b
			}
			r.Changed, r.After = changed == 1, max(r.Before, target)
			return r, nil
		}
	}
	return r, fmt.Errorf("unexpected reply %v", res)
}
