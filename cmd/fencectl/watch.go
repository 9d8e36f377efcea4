package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// Watch events: the state when the watch starts (held or free), then grant,
// release (the lock key was deleted before its TTL ran out: the holder
// released it, release --force did, or it was deleted or lost in Redis)
// and expire (it was gone only after its TTL had run out: a dead or paused
// holder). missed says that grants came and went between two reads, unseen:
// the last token issued moved past every token watch printed; its token is
// that last token.
const (
	evHeld    = "held"
	evFree    = "free"
	evGrant   = "grant"
	evRelease = "release"
	evExpire  = "expire"
	evMissed  = "missed"
)

// watchEvent is one line of watch.
type watchEvent struct {
	Time        time.Time `json:"time"`
	Name        string    `json:"name"`
	Event       string    `json:"event"`
	Token       uint64    `json:"token"`                  // the grant's token (0 for a value fencekit did not write, or free)
	RemainingMS int64     `json:"remaining_ms,omitempty"` // held and grant: the TTL left when seen
}

func setupWatch(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	rf := addRedisFlags(fs)
	interval := fs.Duration("interval", defWatchPolling, "how often to read the lease")
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

// watcher follows one lease: it polls Inspect, listens to the release
// channel (the release script publishes there when a waiter asked for it,
// and release --force always does), and prints each change once. It tells
// a release from an expiry by the TTL last seen: a key gone before that
// TTL could run out was deleted.
type watcher struct {
	c    *redisConn
	o    *output
	name string
	left int // events still to print; 0 means no limit

	held    bool
	token   fence.Token // the holder last seen, when held
	expires time.Time   // the earliest its key could expire, when held (zero: no expiry)
	gone    fence.Token // the last holder reported ended
	last    fence.Token // the newest token accounted for: printed, or issued when the watch began
	notes   <-chan *redis.Message
}

// errDone ends the watch after -count events.
var errDone = errors.New("done")

func (w *watcher) run(ctx context.Context, interval time.Duration) error {
	ps := w.c.rdb.Subscribe(ctx, w.c.key(w.name, suffixReleased))
	defer ps.Close()
	if err := w.c.call(ctx, func(ctx context.Context) error { _, err := ps.Receive(ctx); return err }); err != nil {
		return fmt.Errorf("subscribe to %s's releases: %w", w.name, err)
	}
	w.notes = ps.Channel()
	sent := time.Now()
	info, err := w.c.inspect(ctx, w.name)
	if err != nil {
		return err
	}
	w.last = info.Last
	first := watchEvent{Event: evFree}
	if info.Held {
		w.seen(info, sent)
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
		case errors.Is(err, errDone):
			return nil
		case err != nil:
			fmt.Fprintf(w.o.errs, "fencectl watch: %v\n", err) // Redis down: keep watching
		}
	}
}

// seen records the holder info shows, read by a request sent at sent.
func (w *watcher) seen(info lease.Info, sent time.Time) {
	w.held, w.token, w.expires = true, info.Holder, time.Time{}
	if info.Remaining >= 0 {
		w.expires = sent.Add(info.Remaining)
	}
}

// released handles a release notification of tok.
func (w *watcher) released(ctx context.Context, tok fence.Token) error {
	if tok == w.gone {
		return nil // reported already, by the poll that found the key gone
	}
	if !w.held || w.token != tok {
		// Granted and released between two polls: the grant first.
		if err := w.ended(time.Now()); err != nil {
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
	sent := time.Now()
	info, err := w.c.inspect(ctx, w.name)
	if err != nil {
		return err
	}
	if w.held && (!info.Held || info.Holder != w.token) {
		if err := w.ended(time.Now()); err != nil {
			return err
		}
	}
	if info.Last > w.last && (!info.Held || info.Holder != info.Last) {
		// Grants that began and ended between two reads.
		if err := w.print(watchEvent{Event: evMissed, Token: uint64(info.Last)}, true); err != nil {
			return err
		}
	}
	if !info.Held {
		return nil
	}
	granted := !w.held
	w.seen(info, sent)
	if granted {
		return w.print(watchEvent{Event: evGrant, Token: uint64(info.Holder), RemainingMS: ms(info.Remaining)}, true)
	}
	return nil
}

// ended reports the end of the holder last seen, found gone at now: a
// release when its key could not have expired yet, an expiry otherwise.
func (w *watcher) ended(now time.Time) error {
	if !w.held {
		return nil
	}
	ev := evExpire
	if w.expires.IsZero() || now.Before(w.expires) {
		ev = evRelease
	}
	tok := w.token
	w.held, w.token, w.gone = false, 0, tok
	return w.print(watchEvent{Event: ev, Token: uint64(tok)}, true)
}

// print prints ev; counted events bring -count closer.
func (w *watcher) print(ev watchEvent, counted bool) error {
	ev.Time, ev.Name = time.Now().UTC(), w.name
	w.last = max(w.last, fence.Token(ev.Token))
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
