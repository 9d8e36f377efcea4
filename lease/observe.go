package lease

import (
	"context"
	"time"

	"github.com/fencekit/fencekit/internal/leasearg"
)

// observePoll is how often [Client.Observe] reads a name that no release
// notification or holder's expiry has woken it for: a new grant is seen
// within this time.
const observePoll = 250 * time.Millisecond

// Observe reports who holds name, first as it is now and then at every
// change of holder (a grant, a release, an expiry: Held, Holder or
// Identity differ from the previous Info), until ctx ends or the Client is
// closed; then it closes the channel. It is the watch of leader election
// (etcd's Election.Observe, Kubernetes' OnNewLeader): a caller reads the
// channel instead of polling [Client.Inspect].
//
// Cost: one Inspect (one round trip) when the issuer notifies a release
// (Redis, PostgreSQL, etcd, ZooKeeper), at the holder's expiry, and every
// 250ms; grants and releases between two reads are not reported
// one by one, but the next Info's Last shows that tokens were issued. A
// failed read is retried at the next wake-up. The Info values are sent
// as they come: a slow reader delays the next read, never loses the
// latest state. A nil Client, a bad name or a closed
// Client gives a channel that is already closed.
func (c *Client) Observe(ctx context.Context, name string) <-chan Info {
	ch := make(chan Info)
	if c == nil || leasearg.Name(name) != nil || !c.addObserver() {
		close(ch)
		return ch
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.hb.ctx, cancel) // Close ends it
	go func() {
		defer c.observers.Done()
		defer close(ch)
		defer stop()
		defer cancel()
		c.observe(ctx, name, ch)
	}()
	return ch
}

func (c *Client) observe(ctx context.Context, name string, ch chan<- Info) {
	w, err := c.b.Watch(ctx, name)
	if err != nil || w == nil {
		w = noWatch{}
	}
	defer w.Close()
	var last Info
	sent := false
	for {
		info, err := c.Inspect(ctx, name)
		if err == nil && (!sent || info.Held != last.Held || info.Holder != last.Holder || info.Identity != last.Identity) {
			select {
			case ch <- info:
			case <-ctx.Done():
				return
			}
			last, sent = info, true
		}
		wait := observePoll
		if err == nil && info.Held && info.Remaining >= 0 && info.Remaining < wait {
			wait = info.Remaining + time.Millisecond // just after the holder's expiry
		}
		wctx, cancelWait := context.WithTimeout(ctx, wait)
		w.Wait(wctx)
		cancelWait()
		if ctx.Err() != nil {
			return
		}
	}
}

// addObserver counts one more Observe goroutine or AcquireWait call for
// Close to join, unless the Client is closed (it reports false then).
func (c *Client) addObserver() bool {
	c.hb.mu.Lock()
	defer c.hb.mu.Unlock()
	if c.hb.closed {
		return false
	}
	c.observers.Add(1)
	return true
}
