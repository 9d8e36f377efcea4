package lease

import (
	"context"
	"time"
)

// heartbeat renews the lease every interval, counted from when the previous
// acquire or renew request was sent, until the lease ends. A renewal that
// fails is retried every RetryDelay; each request's context ends at the
// local deadline, and the deadline timer (checkDeadline) ends the lease on
// time even if a request outlives its context. A definite "not yours"
// answer ends the lease at once.
func (l *Lease) heartbeat(sent time.Time) {
	defer close(l.hbDone)
	next := sent.Add(l.t.interval)
	// Bounded: every pass either waits until next, which moves forward, or
	// returns; the lease ends at its deadline at the latest.
	for {
		if !sleepUntil(l.hbCtx, next) {
			return
		}
		sent = time.Now()
		ok, done := l.renewOnce(sent)
		if done {
			return
		}
		if ok {
			next = sent.Add(l.t.interval)
		} else {
			next = time.Now().Add(l.t.retry)
		}
	}
}

// renewOnce sends one renewal. ok reports a confirmed renewal; done that the
// heartbeat must stop (the lease ended).
func (l *Lease) renewOnce(sent time.Time) (ok, done bool) {
	ctx, cancel := context.WithDeadline(l.hbCtx, l.Deadline())
	defer cancel()
	l.sending(sent)
	res, err := renewScript.Run(ctx, l.c.scripts, []string{l.k.lock}, l.value, l.t.ttl.Milliseconds()).Int64()
	latency := time.Since(sent)
	l.sending(time.Time{})
	if l.hbCtx.Err() != nil {
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

// sleepUntil waits until t or until ctx ends; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
