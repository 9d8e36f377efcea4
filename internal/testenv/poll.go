package testenv

import (
	"testing"
	"time"
)

// Poll waits until cond reports true, checking every 2ms, and fails tb
// when it has not within timeout; what names the awaited state in the
// message. Tests wait for what they can observe (a waiter's mark, a
// request sent) with Poll, not for a fixed time: a sleep lets a slow
// goroutine act after the step it was meant to precede, and the test
// passes without testing that step.
func Poll(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
