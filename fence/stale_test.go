package fence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		presented, current fence.Token
		stale              bool
	}{
		{33, 34, true},  // the paused holder after the new grant
		{34, 34, false}, // the same holder writing again
		{35, 34, false}, // a newer holder
		{1, 0, false},   // first write ever
		{0, 0, false},   // unfenced data, unfenced writer
		{0, 1, true},    // an unfenced write after a fenced one
		{1<<63 - 2, 1<<63 - 1, true},
	} {
		err := fence.Check("orders", tc.presented, tc.current)
		if got := err != nil; got != tc.stale {
			t.Errorf("Check(presented %d, current %d) = %v; stale want %v", tc.presented, tc.current, err, tc.stale)
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, fence.ErrStale) {
			t.Errorf("Check error %v is not ErrStale", err)
		}
		var se *fence.StaleError
		if !errors.As(err, &se) {
			t.Fatalf("Check error %T is not a *StaleError", err)
		}
		if se.Resource != "orders" || se.Presented != tc.presented || se.Current != tc.current {
			t.Errorf("StaleError = %+v, want {orders %d %d}", *se, tc.presented, tc.current)
		}
	}
}

func TestStaleErrorWrapped(t *testing.T) {
	err := fmt.Errorf("sqlfence: update orders: %w", &fence.StaleError{Resource: `a "b"`, Presented: 33, Current: 34})
	if !errors.Is(err, fence.ErrStale) {
		t.Fatal("wrapped StaleError does not match ErrStale")
	}
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 34 {
		t.Fatalf("errors.As through a wrap gave %+v", se)
	}
	msg := err.Error()
	for _, want := range []string{"33", "34", `"a \"b\""`, "stale"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	if errors.Is(errors.New("fence: stale token"), fence.ErrStale) {
		t.Error("an unrelated error with the same text matched ErrStale")
	}
}

func TestStaleErrorIsFencedOut(t *testing.T) {
	err := fmt.Errorf("write: %w", fence.Check("r", 3, 5))
	if !errors.Is(err, fence.ErrFencedOut) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("%v matches ErrFencedOut %v, ErrStale %v; want both", err,
			errors.Is(err, fence.ErrFencedOut), errors.Is(err, fence.ErrStale))
	}
	if errors.Is(fence.ErrFencedOut, fence.ErrStale) {
		t.Error("ErrFencedOut matches ErrStale: a lost lease is not a refused write")
	}
}
