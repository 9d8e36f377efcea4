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
	"github.com/fencekit/fencekit/lease"
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
	const a, b = 0, 1
	r := &realRun{start: time.Now()}
	h, err := startHolder(c)
	if err != nil {
		return nil, nil, err
	}
	defer h.kill()
	pid := h.cmd.Process.Pid

	line, err := h.expect(ctx, "acquired ")
	if err != nil {
		return nil, nil, err
	}
	tokA, err := fence.ParseToken(line)
	if err != nil {
		return nil, nil, fmt.Errorf("real: holder's token: %w", err)
	}
	r.add(sim.Event{Kind: sim.KindGranted, Client: a, Token: tokA, Dur: c.TTL})
	r.add(sim.Event{Kind: sim.KindAcquired, Client: a, Token: tokA, Dur: c.TTL})
	if _, err := h.expect(ctx, "checked"); err != nil {
		return nil, nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, nil, fmt.Errorf("real: SIGSTOP holder: %w", err)
	}
	pausedAt := time.Now()
	r.add(sim.Event{Kind: sim.KindPaused, Client: a, Dur: c.Pause})
	for i := 0; i < 100 && !stopped(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !stopped(pid) {
		return nil, nil, errors.New("real: the holder did not stop after SIGSTOP")
	}

	// B: refused while A's lease lives, then granted once it expires. (On a
	// very slow machine A's lease may already be gone: then B gets it at once.)
	lc := lease.New(s.rdb, nil)
	lb, err := lc.Acquire(ctx, c.Name, c.TTL)
	var na *lease.NotAcquiredError
	switch {
	case errors.As(err, &na):
		r.add(sim.Event{Kind: sim.KindRefused, Client: b, Other: na.Holder, Dur: na.Remaining})
		wctx, wcancel := context.WithTimeout(ctx, 3*c.TTL+10*time.Second)
		lb, err = lc.AcquireWait(wctx, c.Name, c.TTL)
		wcancel()
		if err != nil {
			return nil, nil, fmt.Errorf("real: B's AcquireWait: %w", err)
		}
	case err != nil:
		return nil, nil, fmt.Errorf("real: B's acquire: %w", err)
	}
	defer lb.Release(context.WithoutCancel(ctx))
	tokB := lb.Token()
	r.add(sim.Event{Kind: sim.KindExpired, Client: a, Token: tokA}) // observed: B got the lease
	r.add(sim.Event{Kind: sim.KindGranted, Client: b, Token: tokB, Dur: c.TTL})
	r.add(sim.Event{Kind: sim.KindAcquired, Client: b, Token: tokB, Dur: c.TTL})
	var failures []string
	if err := sqlfence.Fence(ctx, s.pool, c.Name, tokB); err != nil {
		failures = append(failures, fmt.Sprintf("B's sqlfence.Fence: %v", err))
	}
	var bWrites []int
	for _, store := range realStores {
		sent := r.now()
		bWrites = append(bWrites, len(r.writes))
		if f := r.write(b, tokB, sent, true, s.write(ctx, c, store, tokB, "B's data")); f != "" {
			failures = append(failures, fmt.Sprintf("B's write to %s: %s", store, f))
		}
	}

	// A resumes after its pause and writes what it was about to write.
	select {
	case <-time.After(time.Until(pausedAt.Add(c.Pause))):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	if _, err := io.WriteString(h.stdin, "write\n"); err != nil {
		return nil, nil, fmt.Errorf("real: tell the holder to write: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return nil, nil, fmt.Errorf("real: SIGCONT holder: %w", err)
	}
	resumed := r.now()
	r.add(sim.Event{Kind: sim.KindResumed, Client: a})
	for _, store := range realStores {
		outcome, err := h.expect(ctx, "write "+store+" ")
		if err != nil {
			return nil, nil, err
		}
		if outcome == "ok" {
			failures = append(failures, fmt.Sprintf("%s ACCEPTED A's stale write with token %d after token %d", store, tokA, tokB))
		}
		if f := r.write(a, tokA, resumed, false, outcome); f != "" {
			failures = append(failures, fmt.Sprintf("A's write to %s: %s", store, f))
		}
	}
	if state, err := h.expect(ctx, "lease "); err == nil && strings.HasPrefix(state, "lost") {
		r.add(sim.Event{Kind: sim.KindLost, Client: a, Token: tokA, Other: tokB})
	}
	if err := h.cmd.Wait(); err != nil {
		failures = append(failures, fmt.Sprintf("holder exited: %v", err))
	}
	if err := lb.Release(ctx); err != nil {
		failures = append(failures, fmt.Sprintf("B's release: %v", err))
	} else {
		r.add(sim.Event{Kind: sim.KindReleased, Client: b, Token: tokB})
	}
	final, ff := verifyFinal(ctx, c, s, tokB, bWrites)
	failures = append(failures, ff...)
	res := sim.NewRecorded([]string{"A", "B"}, c.Name, true, c.TTL, c.TTL/3, r.events, r.writes, final)
	return res, failures, nil
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
	tok, err := sqlfence.Current(ctx, s.pool, c.Name)
	var value string
	if err == nil {
		err = s.pool.QueryRow(ctx, `SELECT value FROM `+demoGuardTable+` WHERE key = $1`, c.Name).Scan(&value)
	}
	check(0, "pg-guard", tok, value, err)
	tok, err = s.table.Version(ctx, s.pool, c.Name)
	if err == nil {
		err = s.pool.QueryRow(ctx, `SELECT value FROM `+demoRowTable+` WHERE key = $1`, c.Name).Scan(&value)
	}
	check(1, "pg-row", tok, value, err)
	body, tok, err := s.blobs.Get(ctx, c.Name)
	check(2, "s3", tok, string(body), err)
	return final, failures
}
