package lease

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The heartbeat. A Client keeps its live leases in one min-heap (a wheel)
// ordered by each lease's next wake-up: its next renewal, or its local
// deadline while a renewal is in flight or failing. One runtime timer, armed
// for the earliest wake-up, serves every lease of the Client.
//
// Why one timer and not one per lease: adding a timer that becomes the
// earliest of its P's heap wakes a thread sleeping in the network poller
// (runtime.wakeNetPoller). Armed per lease, that is one cross-thread wake-up
// per Acquire and another per renewal, which on a 2-vCPU machine cost about
// as much client CPU as the acquire's round trip itself. The wheel's timer is
// left armed when leases end (a spurious firing finds nothing due and costs
// less than re-arming on every Acquire), so a new lease whose first renewal
// comes after the armed time touches no runtime timer at all.
//
// Between renewals a lease costs a heap entry and nothing else. When a
// renewal is due the wheel starts a goroutine that sends it; that goroutine
// sends the next one itself if it is due already when the reply comes (a
// RenewInterval shorter than a round trip), else puts the lease back in the
// wheel and exits. Each request carries the lease's deadline (go-redis turns
// it into socket deadlines) and is cancelled with the lease; the wheel ends
// the lease at its deadline even if the request outlives it. A definite "not
// yours" answer ends the lease at once.
//
// Lock order: Lease.mu, then wheel.mu.
//
// A runtime timer belongs to the testing/synctest bubble it was made in (or
// to none): the bubble's fake clock drives it, it never fires once the
// bubble is gone, and resetting it from outside the bubble is fatal. So the
// wheel keeps the leases of each clock apart, each clock with its own heap
// and timer: real time, and the bubble the Client is used in. A lease's
// clock is fixed when it is granted (see inBubble), so a lease held in real
// time while the Client is used in a bubble, or after it, keeps its timer.
// The bubble's timer is made again when the Client was used outside a
// bubble since it was made (the bubble may be gone). Two bubbles in turn
// are not told apart: a Client must not be shared between them, and a
// lease made in a bubble must end in it.

type wheel struct {
	mu      sync.Mutex
	clocks  [2]clock // [0] real time, [1] the synctest bubble's
	outside bool     // a real-time lease was set since clocks[1].timer was made
}

// clock is the part of the wheel one runtime timer serves: the leases of
// one clock, in a min-heap by wake-up.
type clock struct {
	heap  []*Lease
	timer *time.Timer // nil until the first lease
	armed time.Time   // when timer fires; zero when it is not armed
	gen   int         // counts timers: a firing of an abandoned one does nothing
}

func (w *wheel) clockOf(l *Lease) *clock {
	if l.fake {
		return &w.clocks[1]
	}
	return &w.clocks[0]
}

// set puts l in the wheel, or moves it, to wake at when. l.mu is held.
func (w *wheel) set(l *Lease, when time.Time) {
	w.mu.Lock()
	c := w.clockOf(l)
	l.wake = when
	if l.slot < 0 {
		l.slot = len(c.heap)
		c.heap = append(c.heap, l)
	}
	c.fix(l.slot)
	if !l.fake {
		w.outside = true
	} else {
		if w.outside && c.timer != nil {
			// The Client was used outside a bubble since this timer was
			// made in one, which may be gone. Its firing will do nothing.
			c.timer, c.armed = nil, time.Time{}
			c.gen++
		}
		w.outside = false
	}
	if c.armed.IsZero() || c.heap[0].wake.Before(c.armed) {
		w.armLocked(c, c.heap[0].wake)
	}
	w.mu.Unlock()
}

// remove takes l out of the wheel. l.mu is held. The timer stays armed.
func (w *wheel) remove(l *Lease) {
	w.mu.Lock()
	if l.slot >= 0 {
		w.clockOf(l).removeAt(l.slot)
	}
	w.mu.Unlock()
}

func (w *wheel) armLocked(c *clock, when time.Time) {
	c.armed = when
	if c.timer == nil {
		gen := c.gen
		c.timer = time.AfterFunc(time.Until(when), func() { w.fire(c, gen) })
		return
	}
	c.timer.Reset(time.Until(when))
}

// inBubble reports whether t was read inside a testing/synctest bubble:
// time.Now there has no monotonic clock reading, and t.Round(0) strips it.
// Only a time read by time.Now tells: t.Add drops the reading when the
// result is past the year 2157 (the deadline of a lease whose TTL reaches
// that far).
func inBubble(t time.Time) bool { return t == t.Round(0) }

// fire runs in the goroutine of c's timer number gen: it takes the leases
// that are due out of c, re-arms the timer for the next one, and ticks
// them.
func (w *wheel) fire(c *clock, gen int) {
	now := time.Now()
	var due []*Lease
	w.mu.Lock()
	if gen != c.gen {
		w.mu.Unlock()
		return
	}
	c.armed = time.Time{}
	for len(c.heap) > 0 && !c.heap[0].wake.After(now) {
		due = append(due, c.heap[0])
		c.removeAt(0)
	}
	if len(c.heap) > 0 {
		w.armLocked(c, c.heap[0].wake)
	}
	w.mu.Unlock()
	for _, l := range due {
		l.tick()
	}
}

func (c *clock) removeAt(i int) {
	last := len(c.heap) - 1
	l := c.heap[i]
	if i != last {
		c.swap(i, last)
	}
	c.heap[last] = nil
	c.heap = c.heap[:last]
	l.slot = -1
	if i != last {
		c.fix(i)
	}
}

// fix restores the heap order after the entry at i changed.
func (c *clock) fix(i int) {
	for i > 0 { // up
		p := (i - 1) / 2
		if !c.heap[i].wake.Before(c.heap[p].wake) {
			break
		}
		c.swap(i, p)
		i = p
	}
	for { // down
		k := 2*i + 1
		if k >= len(c.heap) {
			return
		}
		if r := k + 1; r < len(c.heap) && c.heap[r].wake.Before(c.heap[k].wake) {
			k = r
		}
		if !c.heap[k].wake.Before(c.heap[i].wake) {
			return
		}
		c.swap(i, k)
		i = k
	}
}

func (c *clock) swap(i, j int) {
	c.heap[i], c.heap[j] = c.heap[j], c.heap[i]
	c.heap[i].slot = i
	c.heap[j].slot = j
}

// wakeLocked is when the wheel must next look at l: its deadline while a
// renewal is in flight, else its next renewal (or retry), never after the
// deadline.
func (l *Lease) wakeLocked() time.Time {
	if !l.inflight.IsZero() || l.deadline.Before(l.nextBeat) {
		return l.deadline
	}
	return l.nextBeat
}

// tick runs when the wheel wakes l: it ends the lease at its deadline (in
// a goroutine, see expire), starts the renewal that is due, or puts l back
// for later.
func (l *Lease) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.frozen {
		return
	}
	now := time.Now()
	switch {
	case !now.Before(l.deadline):
		// Ending a lease counts through the user's meter before it cancels
		// the Context: do it in a goroutine of its own, so that a slow
		// meter delays no other lease due now.
		go l.expire()
	case l.inflight.IsZero() && !now.Before(l.nextBeat):
		l.sendingLocked(now)
		l.beats.Add(1)
		go l.renew(now, l.deadline)
	default:
		l.c.wheel.set(l, l.wakeLocked())
	}
}

// sendingLocked records a renewal sent at now: until its reply the wheel
// looks at l only at its deadline.
func (l *Lease) sendingLocked(now time.Time) {
	l.inflight = now
	l.c.wheel.set(l, l.deadline)
}

// expiredLocked is the cause of a lease whose deadline passed unrenewed.
func (l *Lease) expiredLocked() *LostError {
	return &LostError{Name: l.name, Token: l.token, Cause: CauseExpired, Err: l.lastErrLocked()}
}

// expire ends l, whose deadline the wheel found passed, unless a renewal
// confirmed since then moved the deadline (and put l back in the wheel).
func (l *Lease) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ended || l.frozen:
	case time.Now().Before(l.deadline):
		l.c.wheel.set(l, l.wakeLocked())
	default:
		l.endLocked(l.expiredLocked())
	}
}

// renewCtx is a renewal's context: the lease's context (cancelled when the
// lease ends, by the wheel at the latest at the deadline) with the deadline
// the lease had when the request was sent, which go-redis turns into socket
// deadlines. It needs no timer of its own.
type renewCtx struct {
	context.Context
	deadline time.Time
}

func (c renewCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// renew sends renewals, the first at sent, as long as each reply finds the
// next one already due; then it puts the lease back in the wheel and exits.
func (l *Lease) renew(sent, deadline time.Time) {
	defer l.beats.Add(-1)
	for {
		err := l.send(sent, deadline)
		if l.ctx.Err() != nil {
			l.finish()
			return
		}
		var again bool
		if sent, deadline, again = l.renewed(sent, err); !again {
			return
		}
	}
}

// send sends one renewal, sent at sent, and records its latency unless the
// lease ended meanwhile (a Release cancels the renewal in flight).
func (l *Lease) send(sent, deadline time.Time) error {
	var errs [1]error
	l.c.b.Renew(renewCtx{l.ctx, deadline}, []*Grant{l.g}, errs[:])
	err := errs[0]
	latency := time.Since(sent)
	if l.ctx.Err() != nil {
		return err
	}
	var lost *LostError
	switch {
	case errors.As(err, &lost):
		l.c.m.heartbeat(l.ctx, latency, lost.Cause)
	case err != nil:
		l.c.m.heartbeat(l.ctx, latency, "error")
	default:
		l.c.m.heartbeat(l.ctx, latency, "ok")
		l.c.m.observeLatency(l.name, latency, l.t.ttl)
	}
	return err
}

// finish clears the in-flight renewal of a lease that ended.
func (l *Lease) finish() {
	l.mu.Lock()
	l.inflight = time.Time{}
	l.mu.Unlock()
}

// renewed records the outcome of the renewal sent at sent. It returns again
// true, with the next request's send time and deadline, when the next
// renewal is due already and the caller must send it.
func (l *Lease) renewed(sent time.Time, err error) (next, deadline time.Time, again bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight = time.Time{}
	if l.ended {
		return
	}
	now := time.Now()
	var lost *LostError
	switch {
	case errors.As(err, &lost):
		l.endLocked(lost)
		return
	case err != nil:
		l.hbErr = err
		l.nextBeat = now.Add(l.t.retry)
	default:
		// Redis extended the key when it ran the script, after sent: the
		// key lives at least until sent + TTL, whenever the reply came.
		l.hbErr = nil
		if d := l.t.deadline(sent); d.After(l.deadline) {
			l.deadline = d
		}
		l.nextBeat = sent.Add(l.t.interval)
	}
	if l.frozen {
		return
	}
	switch {
	case !now.Before(l.deadline):
		l.endLocked(l.expiredLocked())
	case !now.Before(l.nextBeat):
		l.sendingLocked(now)
		return now, l.deadline, true
	default:
		l.c.wheel.set(l, l.wakeLocked())
	}
	return
}

// beating reports whether a renewal is running now (for tests: no
// goroutine is left once a lease has ended and this is false).
func (l *Lease) beating() bool { return l.beats.Load() > 0 }
