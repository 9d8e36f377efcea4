package fence_test

import (
	"context"
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
		{fence.MaxToken - 1, fence.MaxToken, true},
	} {
		err := fence.Check("orders", tc.presented, tc.current)
		if got := err != nil; got != tc.stale {
			t.Errorf("Check(presented %d, current %d) = %v; stale want %v", tc.presented, tc.current, err, tc.stale)
		}
		if got := fence.IsStale(tc.presented, tc.current); got != tc.stale {
			t.Errorf("IsStale(%d, %d) = %v, want %v", tc.presented, tc.current, got, tc.stale)
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

func TestVerifyHistory(t *testing.T) {
	for _, h := range [][]fence.Token{nil, {5}, {1, 1, 2, 2, 9}, {0, 0, 3}} {
		if err := fence.VerifyHistory("r", h); err != nil {
			t.Errorf("VerifyHistory(%v) = %v, want nil", h, err)
		}
	}
	err := fence.VerifyHistory("r", []fence.Token{1, 4, 4, 3, 5})
	if err == nil {
		t.Fatal("VerifyHistory accepted 3 after 4")
	}
	for _, want := range []string{"write 3 accepted token 3", "write 1 accepted token 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestContextToken(t *testing.T) {
	ctx := context.Background()
	if tok, ok := fence.TokenFrom(ctx); ok || tok != 0 {
		t.Fatalf("TokenFrom(empty) = %d, %v", tok, ok)
	}
	ctx = fence.WithToken(ctx, 34)
	if tok, ok := fence.TokenFrom(ctx); !ok || tok != 34 {
		t.Fatalf("TokenFrom = %d, %v; want 34, true", tok, ok)
	}
	child, cancel := context.WithCancel(fence.WithToken(ctx, 35))
	defer cancel()
	if tok, _ := fence.TokenFrom(child); tok != 35 {
		t.Fatalf("inner WithToken did not shadow: %d", tok)
	}
	if tok, _ := fence.TokenFrom(ctx); tok != 34 {
		t.Fatalf("parent changed: %d", tok)
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
