package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
)

// Watch events: the state when the watch starts (held or free), then grant,
// release (the holder released it, or release --force did) and expire (it
// ended without a release: its TTL ran out, or the key was deleted or lost).
const (
	evHeld    = "held"
	evFree    = "free"
	evGrant   = "grant"
	evRelease = "release"
	evExpire  = "expire"
)

// watchEvent is one line of watch.
type watchEvent struct {
	Time        time.Time `json:"time"`
	Name        string    `json:"name"`
	Event       string    `json:"event"`
	Token       uint64    `json:"token"`                  // the grant's token (0 for a value fencekit did not write, or free)
	RemainingMS int64     `json:"remaining_ms,omitempty"` // held and grant: the TTL left when seen
}

// releaseGrace is how long watch waits for a release notification before
// it calls the end of a lease an expiry: the notification may reach it
// after the poll that saw the key gone.
const releaseGrace = 200 * time.Millisecond

func setupWatch(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	rf := addRedisFlags(fs)
	interval := fs.Duration("interval", defWatchPolling, "how often to read the lease (releases are pushed at once)")
	count := fs.Int("count", 0, "stop after this many events (grant, release, expire); 0 watches until interrupted")
	return func(ctx context.Context, args []string) error {
		name, err := oneName(args)
		if err != nil {
			return err
		}
		if *interval <= 0 || *count < 0 {
			return usagef("-interval must be positive and -count not negative")
		}
		c, err := rf.connect()
		if err != nil {
			return err
		}
		defer c.Close()
		w := &watcher{c: c, o: o, name: name, left: *count}
		return w.run(ctx, *interval)
	}
}

// watcher follows one lease: it polls Inspect and listens to the release
// channel, and prints each change once.
type watcher struct {
	c    *redisConn
	o    *output
	name string
	left int // events still to print; 0 means no limit

	held  bool
	token fence.Token // the holder last seen, when held
	gone  fence.Token // the last holder reported ended
	notes <-chan *redis.Message
	early []fence.Token // releases read while waiting for another
}

// errDone ends the watch after -count events.
var errDone = fmt.Errorf("done")

func (w *watcher) run(ctx context.Context, interval time.Duration) error {
	ps := w.c.rdb.Subscribe(ctx, w.c.key(w.name, suffixReleased))
	defer ps.Close()
	if err := w.c.call(ctx, func(ctx context.Context) error { _, err := ps.Receive(ctx); return err }); err != nil {
		return fmt.Errorf("subscribe to %s's releases: %w", w.name, err)
	}
	w.notes = ps.Channel()
	info, err := w.c.inspect(ctx, w.name)
	if err != nil {
		return err
	}
	w.held, w.token = info.Held, info.Holder
	first := watchEvent{Event: evFree}
	if info.Held {
		first = watchEvent{Event: evHeld, Token: uint64(info.Holder), RemainingMS: ms(info.Remaining)}
	}
	if err := w.print(first, false); err != nil {
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case m := <-w.notes:
			err = w.released(ctx, holderToken(m.Payload))
		case <-tick.C:
			err = w.poll(ctx)
		}
		switch {
		case err == errDone:
			return nil
		case err != nil:
			fmt.Fprintf(w.o.errs, "fencectl watch: %v\n", err) // Redis down: keep watching
		}
	}
}

// released handles a release notification of tok.
func (w *watcher) released(ctx context.Context, tok fence.Token) error {
	if tok == w.gone {
		return nil // reported already, as an expiry when the notification came late
	}
	if !w.held || w.token != tok {
		// Granted and released between two polls: the grant first. The
		// holder seen before ended without a release (its own would have
		// come first).
		if err := w.ended(ctx, false); err != nil {
			return err
		}
		if err := w.print(watchEvent{Event: evGrant, Token: uint64(tok)}, true); err != nil {
			return err
		}
	}
	w.held, w.token, w.gone = false, 0, tok
	if err := w.print(watchEvent{Event: evRelease, Token: uint64(tok)}, true); err != nil {
		return err
	}
	return w.poll(ctx) // a waiter may have taken it already
}

// poll reads the lease and prints what changed since the last look.
func (w *watcher) poll(ctx context.Context) error {
	info, err := w.c.inspect(ctx, w.name)
	if err != nil {
		return err
	}
	if w.held && (!info.Held || info.Holder != w.token) {
		if err := w.ended(ctx, true); err != nil {
			return err
		}
	}
	if info.Held && !w.held {
		w.held, w.token = true, info.Holder
		return w.print(watchEvent{Event: evGrant, Token: uint64(info.Holder), RemainingMS: ms(info.Remaining)}, true)
	}
	return nil
}

// ended reports the end of the holder last seen, if any: a release when
// its notification comes within releaseGrace (wait), an expiry otherwise.
func (w *watcher) ended(ctx context.Context, wait bool) error {
	if !w.held {
		return nil
	}
	tok := w.token
	w.held, w.token, w.gone = false, 0, tok
	d := releaseGrace
	if !wait {
		d = 0
	}
	grace := time.NewTimer(d)
	defer grace.Stop()
	for {
		select {
		case m := <-w.notes:
			if t := holderToken(m.Payload); t != tok {
				w.early = append(w.early, t) // not expected: a later grant's release
				continue
			}
			if err := w.print(watchEvent{Event: evRelease, Token: uint64(tok)}, true); err != nil {
				return err
			}
		case <-grace.C:
			if err := w.print(watchEvent{Event: evExpire, Token: uint64(tok)}, true); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		return w.replayEarly(ctx)
	}
}

// replayEarly handles the releases read while waiting for another one.
func (w *watcher) replayEarly(ctx context.Context) error {
	for len(w.early) > 0 {
		t := w.early[0]
		w.early = w.early[1:]
		if err := w.released(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// print prints ev; counted events bring -count closer.
func (w *watcher) print(ev watchEvent, counted bool) error {
	ev.Time, ev.Name = time.Now().UTC(), w.name
	if w.o.json {
		if err := w.o.encode(ev); err != nil {
			return err
		}
	} else {
		line := fmt.Sprintf("%s %s %-7s token=%s", ev.Time.Format("2006-01-02T15:04:05.000000Z"), ev.Name, ev.Event, tokenText(fence.Token(ev.Token)))
		if ev.RemainingMS != 0 {
			line += " remaining=" + (time.Duration(ev.RemainingMS) * time.Millisecond).String()
		}
		if _, err := fmt.Fprintln(w.o.w, line); err != nil {
			return err
		}
	}
	if counted && w.left > 0 {
		if w.left--; w.left == 0 {
			return errDone
		}
	}
	return nil
}
