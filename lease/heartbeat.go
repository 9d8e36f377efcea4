package lease

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The heartbeat. A Client keeps its live leases in one min-heap ordered by
// each lease's next wake-up: its next renewal, or its local deadline while a
// renewal is in flight or failing. One timer, armed for the earliest
// wake-up, serves every lease of the Client. When it fires (beat), the
// leases that are due leave the heap:
//
//   - a lease past its deadline ends, lost with CauseExpired;
//   - the leases due for renewal go, all together, in one call of the
//     Backend's Renew (Redis: one pipeline, one round trip), sent from the
//     timer's goroutine; they wait in the heap at their deadline meanwhile;
//   - the others go back in the heap at their next wake-up.
//
// "Due for renewal" includes renewals due within the next RenewInterval/8
// (timing.early): sent a little early, they join the batch, and since a
// renewal's send time sets the next one, leases renewed together stay
// together. So a Client holding many leases sends a few batches per
// RenewInterval instead of one request per lease; a lease alone is renewed
// exactly on time.
//
// When the replies come, each renewed lease's deadline moves to the batch's
// send time + TTL - drift margin, and its next renewal to send time +
// RenewInterval; a failed one retries after RetryDelay; a "not yours" reply
// ends the lease at once. The batch's context has the earliest deadline of
// its leases (the first of them is lost then) and ends with Close. A
// Release does not cancel the renewal in flight: the request ends on its
// own or at that deadline, and its answer is then ignored.
//
// The timer is made by New, so a Client runs on the clock it was made
// with: a Client made in a testing/synctest bubble runs on the bubble's
// fake clock and must be used only in that bubble.
//
// A Lease's own state is guarded by Lease.mu; its place in the heap (wake,
// slot) by heartbeat.mu. Lock order: Lease.mu, then heartbeat.mu.
type heartbeat struct {
	mu     sync.Mutex
	heap   leaseHeap   // live leases, by wake; Lease.slot is the index
	timer  *time.Timer // runs beat
	armed  time.Time   // when timer fires; zero when stopped
	closed bool        // Close was called: nothing more is added

	ctx     context.Context // cancelled by Close: ends the renewals in flight
	stop    context.CancelFunc
	running sync.WaitGroup // beats in progress, for Close
}

func (c *Client) startHeartbeat() {
	c.hb.ctx, c.hb.stop = context.WithCancel(context.Background())
	c.hb.timer = time.AfterFunc(time.Hour, c.beat)
	c.hb.timer.Stop()
}

// add puts a new lease l in the heap, to wake at when, unless the Client
// is closed (it reports false then). l.mu is held.
func (h *heartbeat) add(l *Lease, when time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.setLocked(l, when, true)
	return true
}

// set moves l in the heap, or puts it back, to wake at when. arm false
// leaves the timer alone: the beat that sent l's renewal looks again
// before it exits. l.mu is held.
func (h *heartbeat) set(l *Lease, when time.Time, arm bool) {
	h.mu.Lock()
	h.setLocked(l, when, arm)
	h.mu.Unlock()
}

// setLocked re-arms the timer, when arm is true, if l is now the first
// due, unless the Client is closed: Close then finds l in the heap and
// ends it.
func (h *heartbeat) setLocked(l *Lease, when time.Time, arm bool) {
	l.wake = when
	if l.slot < 0 {
		heap.Push(&h.heap, l)
	} else {
		heap.Fix(&h.heap, l.slot)
	}
	if first := h.heap[0].wake; arm && !h.closed && (h.armed.IsZero() || first.Before(h.armed)) {
		h.armLocked(first)
	}
}

// remove takes l out of the heap. l.mu is held. The timer stays armed: a
// firing that finds nothing due costs less than re-arming on every end.
func (h *heartbeat) remove(l *Lease) {
	h.mu.Lock()
	if l.slot >= 0 {
		heap.Remove(&h.heap, l.slot)
	}
	h.mu.Unlock()
}

func (h *heartbeat) armLocked(when time.Time) {
	h.armed = when
	h.timer.Reset(time.Until(when))
}

// beat runs in the timer's goroutine: it takes the due leases out of the
// heap, re-arms the timer for the next one, ends the expired ones and
// renews the others in one batch.
func (c *Client) beat() {
	h := &c.hb
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.running.Add(1)
	h.armed = time.Time{} // the timer fired
	h.mu.Unlock()
	defer h.running.Done()
	var bufs beatBufs
	for c.beatOnce(&bufs) {
	}
}

// beatBufs are a beat's slices, reused by its rounds.
type beatBufs struct {
	due, leases []*Lease
	grants      []*Grant
}

// beatOnce is one round of beat. It reports whether it sent a batch: the
// replies put the leases back in the heap without arming the timer, so
// beat looks again, and a renewal already due when the previous reply came
// (a RenewInterval shorter than a round trip) is sent from this goroutine.
func (c *Client) beatOnce(bufs *beatBufs) bool {
	h := &c.hb
	now := time.Now()
	due := bufs.due[:0]
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	for len(h.heap) > 0 && !h.heap[0].wake.After(now.Add(h.heap[0].t.early)) {
		due = append(due, heap.Pop(&h.heap).(*Lease))
	}
	if len(h.heap) > 0 && (h.armed.IsZero() || h.heap[0].wake.Before(h.armed)) {
		h.armLocked(h.heap[0].wake)
	}
	h.mu.Unlock()

	bufs.due = due
	leases := bufs.leases[:0]
	var deadline time.Time // the earliest of the batch
	for _, l := range due {
		l.mu.Lock()
		switch {
		case l.ended:
		case !now.Before(l.deadline):
			l.endLocked(l.expiredLocked())
		case l.inflight.IsZero() && !now.Add(l.t.early).Before(l.nextBeat):
			l.inflight = now
			h.set(l, l.deadline, true)
			leases = append(leases, l)
			if deadline.IsZero() || l.deadline.Before(deadline) {
				deadline = l.deadline
			}
		default:
			h.set(l, l.wakeLocked(), true)
		}
		l.mu.Unlock()
	}
	if len(leases) == 0 {
		return false
	}
	bufs.leases = leases
	ctx, cancel := context.WithDeadline(h.ctx, deadline)
	c.renew(ctx, leases, now, bufs)
	cancel()
	return true
}

// renew sends the renewals of leases, marked in flight since sent, in one
// call of the Backend, and records each outcome.
func (c *Client) renew(ctx context.Context, leases []*Lease, sent time.Time, bufs *beatBufs) {
	grants := bufs.grants[:0]
	for _, l := range leases {
		grants = append(grants, l.g)
	}
	bufs.grants = grants
	errs := c.b.Renew(ctx, grants)
	latency := time.Since(sent)
	for i, l := range leases {
		var err error
		switch {
		case errs == nil:
		case len(errs) != len(leases):
			err = fmt.Errorf("%s backend answered %d renewals of %d", c.b.Name(), len(errs), len(leases))
		default:
			err = errs[i]
		}
		l.renewed(sent, latency, err)
	}
}

// wakeLocked is when the heartbeat must next look at l: its deadline while
// a renewal is in flight, else its next renewal (or retry), never after the
// deadline.
func (l *Lease) wakeLocked() time.Time {
	if !l.inflight.IsZero() || l.deadline.Before(l.nextBeat) {
		return l.deadline
	}
	return l.nextBeat
}

// renewed records the outcome of l's renewal sent at sent.
func (l *Lease) renewed(sent time.Time, latency time.Duration, err error) {
	lost, isLost := asLost(err)
	if l.ctx.Err() == nil { // not released or ended meanwhile
		switch {
		case isLost:
			l.c.m.heartbeat(l.ctx, latency, lost.Cause)
		case err != nil:
			l.c.m.heartbeat(l.ctx, latency, "error")
		default:
			l.c.m.heartbeat(l.ctx, latency, "ok")
			l.c.m.observeLatency(l.g.Name, latency, l.t.ttl)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight = time.Time{}
	if l.ended {
		return
	}
	now := time.Now()
	switch {
	case isLost:
		l.endLocked(l.lostErr(lost.Cause, lost.Err))
		return
	case err != nil:
		l.hbErr = err
		if !isContextEnd(err) {
			l.storeErr = err
		}
		l.nextBeat = now.Add(l.t.retry)
	default:
		// The store extended the grant when it ran the request, after
		// sent: it lives at least until sent + TTL, whenever the reply came.
		l.hbErr, l.storeErr = nil, nil
		if d := l.t.deadline(sent); d.After(l.deadline) {
			l.deadline = d
		}
		l.nextBeat = sent.Add(l.t.interval)
	}
	if !now.Before(l.deadline) {
		l.endLocked(l.expiredLocked())
		return
	}
	l.c.hb.set(l, l.wakeLocked(), false)
}

// expiredLocked is the cause of a lease whose deadline passed unrenewed.
func (l *Lease) expiredLocked() *LostError {
	return l.lostErr(CauseExpired, l.lastErrLocked())
}

// leaseHeap is container/heap's interface over the live leases, ordered
// by wake; each lease knows its index (slot), for Fix and Remove.
type leaseHeap []*Lease

func (q leaseHeap) Len() int           { return len(q) }
func (q leaseHeap) Less(i, j int) bool { return q[i].wake.Before(q[j].wake) }
func (q leaseHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].slot, q[j].slot = i, j
}
func (q *leaseHeap) Push(x any) {
	l := x.(*Lease)
	l.slot = len(*q)
	*q = append(*q, l)
}
func (q *leaseHeap) Pop() any {
	old := *q
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	l.slot = -1
	return l
}

// The heartbeat's API for the Client's Close.

// close marks the heartbeat closed (nothing more is added) and stops its
// timer; it reports false when it was closed before.
func (h *heartbeat) close() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.closed = true
	h.timer.Stop()
	h.armed = time.Time{}
	return true
}

// isClosed reports whether close was called.
func (h *heartbeat) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// leases returns the leases in the heap now.
func (h *heartbeat) leases() []*Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.heap)
}

// wait cancels the renewals in flight and waits for the beats to return.
func (h *heartbeat) wait() {
	h.stop()
	h.running.Wait()
}
