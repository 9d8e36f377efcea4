package lease

import (
	"context"
	"time"
)

// The heartbeat is a chain of timers, not a goroutine: between renewals a
// lease costs a timer and nothing else, and a lease released before its
// first renewal never starts a goroutine. Each beat runs in the timer's
// goroutine, sends one renewal, and arms the timer for the next beat:
// RenewInterval after the renewal was sent, or RetryDelay after a failure.
// Each request's context ends at the local deadline, and the deadline timer
// (checkDeadline) ends the lease on time even if a request outlives its
// context. A definite "not yours" answer ends the lease at once.

// schedule arms the next beat at t, unless the lease has ended.
func (l *Lease) schedule(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	if l.beatTimer == nil {
		l.beatTimer = time.AfterFunc(time.Until(t), l.beat)
		return
	}
	l.beatTimer.Reset(time.Until(t))
}

// beat sends one renewal and schedules the next.
func (l *Lease) beat() {
	l.beats.Add(1)
	defer l.beats.Add(-1)
	if l.ctx.Err() != nil {
		return
	}
	sent := time.Now()
	ok, done := l.renewOnce(sent)
	switch {
	case done:
	case ok:
		l.schedule(sent.Add(l.t.interval))
	default:
		l.schedule(time.Now().Add(l.t.retry))
	}
}

// renewOnce sends one renewal. ok reports a confirmed renewal; done that the
// heartbeat must stop (the lease ended).
func (l *Lease) renewOnce(sent time.Time) (ok, done bool) {
	ctx, cancel := context.WithDeadline(l.ctx, l.Deadline())
	defer cancel()
	l.sending(sent)
	res, err := renewScript.Run(ctx, l.c.scripts, l.k.both[:1], l.value, l.t.ttl.Milliseconds()).Int64()
	latency := time.Since(sent)
	l.sending(time.Time{})
	if l.ctx.Err() != nil {
		return false, true
	}
	switch {
	case err != nil:
		l.mu.Lock()
		l.hbErr = err
		l.mu.Unlock()
		l.c.m.heartbeat(l.ctx, latency, "error")
		return false, false
	case res != 1:
		l.c.m.heartbeat(l.ctx, latency, resultCause(res))
		l.end(&LostError{Name: l.name, Token: l.token, Cause: resultCause(res)})
		return false, true
	}
	l.c.m.heartbeat(l.ctx, latency, "ok")
	l.c.m.observeLatency(l.name, latency, l.t.ttl)
	return true, !l.extend(sent)
}

// beating reports whether a renewal is running now (for tests: no
// goroutine is left once a lease has ended and this is false).
func (l *Lease) beating() bool { return l.beats.Load() > 0 }
