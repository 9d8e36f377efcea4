package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// Watch events: the state when the watch starts (held, free, or never: no
// token was ever issued for the name), then grant,
// release (the lock key was deleted before its TTL ran out: the holder
// released it, release --force did, or it was deleted or lost in Redis)
// and expire (it was gone only after its TTL had run out: a dead or paused
// holder). missed says that grants came and went between two reads, unseen:
// the last token issued moved past every token watch printed; its token is
// that last token.
const (
	evHeld    = "held"
	evFree    = "free"
	evNever   = "never"
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
	Token       uint64    `json:"token"`                  // the grant's token; free: the last token issued (0 for a value fencekit did not write, or never)
	Identity    string    `json:"identity,omitempty"`     // held and grant: the holder's lease.Options.Identity
	RemainingMS int64     `json:"remaining_ms,omitempty"` // held and grant: the TTL left when seen
}

func setupWatch(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	sf := addStoreFlags(fs)
	interval := fs.Duration("interval", defWatchPolling, "how often to read the lease (more often while a holder's TTL runs out)")
	count := fs.Int("count", 0, "stop after this many lines, the first (held or free) included; 0 watches until interrupted")
	return func(ctx context.Context, args []string) error {
		name, err := oneName(args)
		if err != nil {
			return err
		}
		if *interval <= 0 || *count < 0 {
			return usagef("-interval must be positive and -count not negative")
		}
		s, err := sf.open()
		if err != nil {
			return err
		}
		defer s.close()
		w := &watcher{s: s, timeout: *sf.timeout, o: o, name: name, left: *count}
		return w.run(ctx, *interval)
	}
}

// watcher follows one lease: it polls Inspect, listens to the store's
// release announcements if it has any (Redis: release --force, and a
// holder's release when someone waits), and prints each change once. It
// tells a release from an expiry by the TTL last seen: a grant gone before
// that TTL could run out was released. So that it sees a release before
// the TTL runs out, it reads again, while a holder is seen, before that
// TTL could have run out (at half the time left, down to 1ms).
type watcher struct {
	s       *store
	timeout time.Duration
	o       *output
	name    string
	left    int // lines still to print; 0 means no limit

	held    bool
	token   fence.Token // the holder last seen, when held
	expires time.Time   // the earliest its key could expire, when held (zero: no expiry)
	gone    fence.Token // the last holder reported ended
	last    fence.Token // the newest token accounted for: printed, or issued when the watch began
}

// errDone ends the watch after -count lines.
var errDone = errors.New("done")

func (w *watcher) run(ctx context.Context, interval time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var notes <-chan fence.Token // nil: the issuer announces no releases
	if w.s.releases != nil {
		var err error
		if notes, err = w.s.releases(ctx, w.name); err != nil {
			return err
		}
	}
	sent := time.Now()
	info, err := inspect(ctx, w.s, w.timeout, w.name)
	if err != nil {
		return err
	}
	w.last = info.Last
	first := watchEvent{Event: evFree, Token: uint64(info.Last)}
	if info.Last == 0 {
		first.Event = evNever
	}
	if info.Held {
		w.seen(info, sent)
		first = watchEvent{Event: evHeld, Token: uint64(info.Holder), Identity: info.Identity, RemainingMS: ms(info.Remaining)}
	}
	err = w.print(first)
	timer := time.NewTimer(w.nextPoll(interval))
	defer timer.Stop()
	for err == nil || !errors.Is(err, errDone) {
		if err != nil {
			fmt.Fprintf(w.o.errs, "fencectl watch: %v\n", err) // the store is down: keep watching
		}
		select {
		case <-ctx.Done():
			return nil
		case tok := <-notes:
			err = w.released(ctx, tok)
		case <-timer.C:
			err = w.poll(ctx)
			timer.Reset(w.nextPoll(interval))
		}
	}
	return nil
}

// nextPoll is the time to the next read: interval, or half the time until
// the holder's TTL could run out if that is sooner.
func (w *watcher) nextPoll(interval time.Duration) time.Duration {
	if !w.held || w.expires.IsZero() {
		return interval
	}
	return min(interval, max(time.Until(w.expires)/2, time.Millisecond))
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
		if err := w.print(watchEvent{Event: evGrant, Token: uint64(tok)}); err != nil {
			return err
		}
	}
	w.held, w.token, w.gone = false, 0, tok
	if err := w.print(watchEvent{Event: evRelease, Token: uint64(tok)}); err != nil {
		return err
	}
	return w.poll(ctx) // a waiter may have taken it already
}

// poll reads the lease and prints what changed since the last look.
func (w *watcher) poll(ctx context.Context) error {
	sent := time.Now()
	info, err := inspect(ctx, w.s, w.timeout, w.name)
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
		if err := w.print(watchEvent{Event: evMissed, Token: uint64(info.Last)}); err != nil {
			return err
		}
	}
	if !info.Held {
		return nil
	}
	granted := !w.held
	w.seen(info, sent)
	if granted {
		return w.print(watchEvent{Event: evGrant, Token: uint64(info.Holder), Identity: info.Identity, RemainingMS: ms(info.Remaining)})
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
	return w.print(watchEvent{Event: ev, Token: uint64(tok)})
}

// print prints ev, one line, which brings -count closer.
func (w *watcher) print(ev watchEvent) error {
	ev.Time, ev.Name = time.Now().UTC(), w.name
	w.last = max(w.last, fence.Token(ev.Token))
	if w.o.json {
		if err := w.o.encode(ev); err != nil {
			return err
		}
	} else {
		line := fmt.Sprintf("%s %s %-7s token=%s", ev.Time.Format("2006-01-02T15:04:05.000000Z"), ev.Name, ev.Event, tokenText(fence.Token(ev.Token)))
		if ev.Identity != "" {
			line += " identity=" + ev.Identity
		}
		if ev.RemainingMS != 0 {
			line += " remaining=" + (time.Duration(ev.RemainingMS) * time.Millisecond).String()
		}
		if _, err := fmt.Fprintln(w.o.w, line); err != nil {
			return err
		}
	}
	if w.left > 0 {
		if w.left--; w.left == 0 {
			return errDone
		}
	}
	return nil
}
