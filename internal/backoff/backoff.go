// Package backoff is the one retry pause of fencekit's packages: a delay
// that doubles with each failure, up to a limit, with jitter.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay returns base doubled n-1 times (n ≥ 1), at most limit, plus a
// random jitter of up to half of it, so that clients that failed together
// do not retry together.
func Delay(base time.Duration, n int, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/2+1)
}

// Sleep waits for d, or until ctx ends: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
