package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		base    time.Duration
		n       int
		limit   time.Duration
		low, hi time.Duration
	}{
		{10 * time.Millisecond, 1, time.Second, 10 * time.Millisecond, 15 * time.Millisecond},
		{10 * time.Millisecond, 3, time.Second, 40 * time.Millisecond, 60 * time.Millisecond},
		{10 * time.Millisecond, 60, time.Second, time.Second, 1500 * time.Millisecond},
		{0, 5, time.Second, 0, 0},
	} {
		for range 100 {
			if d := Delay(tc.base, tc.n, tc.limit); d < tc.low || d > tc.hi {
				t.Fatalf("Delay(%v, %d, %v) = %v, want in [%v, %v]", tc.base, tc.n, tc.limit, d, tc.low, tc.hi)
			}
		}
	}
}
