package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sqlfence"
)

// realRun records what really happened, as simulator events.
type realRun struct {
	start  time.Time
	events []sim.Event
	writes []sim.Write
}

func (r *realRun) now() time.Duration { return time.Since(r.start).Round(time.Millisecond) }

func (r *realRun) add(e sim.Event) {
	e.At = r.now()
	if e.Sent == 0 {
		e.Sent = e.At
	}
	if e.Write == 0 && e.Kind != sim.KindWriteAccepted && e.Kind != sim.KindWriteRejected {
		e.Write = -1
	}
	r.events = append(r.events, e)
}

// write records a write's outcome ("ok", "stale N", "error ...") and
// returns a failure message for an error.
func (r *realRun) write(client int, tok fence.Token, sent time.Duration, live bool, outcome string) string {
	id := len(r.writes)
	w := sim.Write{Client: client, Token: tok, Sent: sent, At: r.now(), Live: live}
	e := sim.Event{Client: client, Token: tok, Sent: sent, Write: id}
	fail := ""
	switch {
	case outcome == "ok":
		w.Accepted, e.Kind = true, sim.KindWriteAccepted
	case strings.HasPrefix(outcome, "stale "):
		cur, _ := strconv.ParseUint(strings.TrimPrefix(outcome, "stale "), 10, 64)
		e.Kind, e.Other = sim.KindWriteRejected, fence.Token(cur)
	default:
		e.Kind = sim.KindWriteRejected
		fail = outcome
	}
	r.writes = append(r.writes, w)
	r.add(e)
	return fail
}

// realScenario runs Kleppmann's scenario on the real servers: A (a child
// process) acquires and is stopped with SIGSTOP; B acquires after the TTL,
// fences the guard row and writes to every store; A is continued and
// writes with its old token. It returns the recorded run and a list of
// failures: a stale write that was accepted, an error, or a store that
// does not hold B's data at the end.
func realScenario(ctx context.Context, c *realConfig, stderr io.Writer) (*sim.Result, []string, error) {
	s, err := c.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer s.close()
	if err := setup(ctx, c, s); err != nil {
		return nil, nil, err
	}
	x := &realExec{c: c, s: s, r: &realRun{start: time.Now()}}
	if x.h, err = startHolder(c); err != nil {
		return nil, nil, err
	}
	defer x.h.kill()
	if err := x.pauseA(ctx); err != nil {
		return nil, nil, err
	}
	lb, err := x.takeOverB(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer lb.Release(context.WithoutCancel(ctx))
	if err := x.resumeA(ctx); err != nil {
		return nil, nil, err
	}
	if err := lb.Release(ctx); err != nil {
		x.failures = append(x.failures, fmt.Sprintf("B's release: %v", err))
	} else {
		x.r.add(sim.Event{Kind: sim.KindReleased, Client: clientB, Token: x.tokB})
	}
	final, ff := verifyFinal(ctx, c, s, x.tokB, x.bWrites)
	x.failures = append(x.failures, ff...)
	res := sim.NewRecorded([]string{"A", "B"}, c.Name, sim.StorageClaim, c.TTL, c.TTL/3, x.r.events, x.r.writes, final)
	return res, x.failures, nil
}

// The real run's two clients, as indexes into its lanes.
const clientA, clientB = 0, 1

// realExec is one execution of the real scenario: the holder child (A),
// the tokens, and what has gone wrong so far.
type realExec struct {
	c          *realConfig
	s          *stores
	r          *realRun
	h          *holder
	tokA, tokB fence.Token
	pausedAt   time.Time
	bWrites    []int // indexes of B's writes, in realStores order
	failures   []string
}

// pauseA waits for the holder to acquire and check its lease, then stops
// it with SIGSTOP.
func (x *realExec) pauseA(ctx context.Context) error {
	line, err := x.h.expect(ctx, "acquired ")
	if err != nil {
		return err
	}
	if x.tokA, err = valid.ParseToken(line); err != nil {
		return fmt.Errorf("real: holder's token: %w", err)
	}
	x.r.add(sim.Event{Kind: sim.KindGranted, Client: clientA, Token: x.tokA, Dur: x.c.TTL})
	x.r.add(sim.Event{Kind: sim.KindAcquired, Client: clientA, Token: x.tokA, Dur: x.c.TTL})
	if _, err := x.h.expect(ctx, "checked"); err != nil {
		return err
	}
	pid := x.h.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("real: SIGSTOP holder: %w", err)
	}
	x.pausedAt = time.Now()
	x.r.add(sim.Event{Kind: sim.KindPaused, Client: clientA, Dur: x.c.Pause})
	for i := 0; i < 100 && !stopped(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !stopped(pid) {
		return errors.New("real: the holder did not stop after SIGSTOP")
	}
	return nil
}

// takeOverB is client B: refused while A's lease lives, then granted once
// it expires (on a very slow machine A's lease may already be gone: then
// B gets it at once). B fences the guard row and writes to every store.
func (x *realExec) takeOverB(ctx context.Context) (*lease.Lease, error) {
	lc, err := redislease.New(x.s.rdb, nil)
	if err != nil {
		return nil, err
	}
	lb, err := lc.Acquire(ctx, x.c.Name, x.c.TTL)
	var na *lease.NotAcquiredError
	switch {
	case errors.As(err, &na):
		x.r.add(sim.Event{Kind: sim.KindRefused, Client: clientB, Other: na.Holder, Dur: na.Remaining})
		wctx, wcancel := context.WithTimeout(ctx, 3*x.c.TTL+10*time.Second)
		lb, err = lc.AcquireWait(wctx, x.c.Name, x.c.TTL)
		wcancel()
		if err != nil {
			return nil, fmt.Errorf("real: B's AcquireWait: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("real: B's acquire: %w", err)
	}
	x.tokB = lb.Token()
	x.r.add(sim.Event{Kind: sim.KindExpired, Client: clientA, Token: x.tokA}) // observed: B got the lease
	x.r.add(sim.Event{Kind: sim.KindGranted, Client: clientB, Token: x.tokB, Dur: x.c.TTL})
	x.r.add(sim.Event{Kind: sim.KindAcquired, Client: clientB, Token: x.tokB, Dur: x.c.TTL})
	if err := sqlfence.Claim(ctx, x.s.pool, x.c.Name, x.tokB); err != nil {
		x.failures = append(x.failures, fmt.Sprintf("B's sqlfence.Claim: %v", err))
	}
	for _, store := range realStores {
		sent := x.r.now()
		x.bWrites = append(x.bWrites, len(x.r.writes))
		if f := x.r.write(clientB, x.tokB, sent, true, x.s.write(ctx, x.c, store, x.tokB, "B's data")); f != "" {
			x.failures = append(x.failures, fmt.Sprintf("B's write to %s: %s", store, f))
		}
	}
	return lb, nil
}

// resumeA continues the holder when its pause is over; it writes what it
// was about to write, with its old token, to every store.
func (x *realExec) resumeA(ctx context.Context) error {
	select {
	case <-time.After(time.Until(x.pausedAt.Add(x.c.Pause))):
	case <-ctx.Done():
		return ctx.Err()
	}
	if _, err := io.WriteString(x.h.stdin, "write\n"); err != nil {
		return fmt.Errorf("real: tell the holder to write: %w", err)
	}
	if err := syscall.Kill(x.h.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("real: SIGCONT holder: %w", err)
	}
	resumed := x.r.now()
	x.r.add(sim.Event{Kind: sim.KindResumed, Client: clientA})
	for _, store := range realStores {
		outcome, err := x.h.expect(ctx, "write "+store+" ")
		if err != nil {
			return err
		}
		if outcome == "ok" {
			x.failures = append(x.failures, fmt.Sprintf("%s ACCEPTED A's stale write with token %d after token %d", store, x.tokA, x.tokB))
		}
		if f := x.r.write(clientA, x.tokA, resumed, false, outcome); f != "" {
			x.failures = append(x.failures, fmt.Sprintf("A's write to %s: %s", store, f))
		}
	}
	if state, err := x.h.expect(ctx, "lease "); err == nil && strings.HasPrefix(state, "lost") {
		x.r.add(sim.Event{Kind: sim.KindLost, Client: clientA, Token: x.tokA, Other: x.tokB})
	}
	if err := x.h.cmd.Wait(); err != nil {
		x.failures = append(x.failures, fmt.Sprintf("holder exited: %v", err))
	}
	return nil
}

// verifyFinal reads every store back: each must hold B's data and token.
// It returns B's writes that are in place and a failure per store that is not.
func verifyFinal(ctx context.Context, c *realConfig, s *stores, tokB fence.Token, bWrites []int) ([]int, []string) {
	var final []int
	var failures []string
	check := func(i int, store string, tok fence.Token, value string, err error) {
		if err != nil {
			failures = append(failures, fmt.Sprintf("read back %s: %v", store, err))
			return
		}
		if tok != tokB || value != "B's data" {
			failures = append(failures, fmt.Sprintf("%s holds %q with token %d, want B's data with token %d", store, value, tok, tokB))
			return
		}
		final = append(final, bWrites[i])
	}
	var cur int64
	var value string
	err := s.pool.QueryRow(ctx, `SELECT t.token, d.value FROM fencekit_tokens t, `+demoGuardTable+` d
		WHERE t.resource = $1 AND d.key = $1`, c.Name).Scan(&cur, &value)
	check(0, "pg-guard", fence.Token(cur), value, err)
	err = s.pool.QueryRow(ctx, `SELECT lock_version, value FROM `+demoRowTable+` WHERE key = $1`, c.Name).Scan(&cur, &value)
	check(1, "pg-row", fence.Token(cur), value, err)
	body, tok, err := s.blobs.Get(ctx, c.Name)
	check(2, "s3", tok, string(body), err)
	return final, failures
}
