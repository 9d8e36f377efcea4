package cause

import (
	"context"
	"errors"
	"testing"
)

func TestWith(t *testing.T) {
	lost := errors.New("lost")
	ctx, cancel := context.WithCancelCause(context.Background())
	failed := errors.New("query failed")
	if err := With(ctx, failed); err != failed {
		t.Errorf("With on a live ctx = %v, want err itself", err)
	}
	cancel(lost)
	err := With(ctx, failed)
	if !errors.Is(err, failed) || !errors.Is(err, lost) || err.Error() != "query failed (lost)" {
		t.Errorf("With on a ctx ended by lost = %q, want both in the chain", err)
	}
	if again := With(ctx, err); again != err {
		t.Errorf("With of an error that carries the cause already = %q, want it unchanged", again)
	}
	if With(ctx, nil) != nil {
		t.Error("With(nil) is not nil")
	}
}
