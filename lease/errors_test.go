package lease

import (
	"errors"
	"testing"

	"github.com/fencekit/fencekit/fence"
)

func TestLostMatchesFencedOut(t *testing.T) {
	for _, err := range []error{ErrLost, &LostError{Name: "n", Token: 7, Cause: CauseStolen}} {
		if !errors.Is(err, fence.ErrFencedOut) || !errors.Is(err, ErrLost) {
			t.Errorf("%v: matches ErrFencedOut %v, ErrLost %v; want both", err, errors.Is(err, fence.ErrFencedOut), errors.Is(err, ErrLost))
		}
	}
	if errors.Is(ErrReleased, fence.ErrFencedOut) || errors.Is(ErrLost, fence.ErrStale) {
		t.Error("ErrReleased must not match ErrFencedOut, nor ErrLost ErrStale")
	}
	if ErrLost.Error() != "lease: lost" {
		t.Errorf("ErrLost says %q", ErrLost.Error())
	}
}
