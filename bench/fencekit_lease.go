package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

func init() {
	newLockers["fencekit"] = func(c redis.UniversalClient) Locker {
		f, err := NewFencekit(c, nil)
		if err != nil { // default options: only a nil client fails, a bug of the harness
			panic(err)
		}
		return f
	}
}

// Fencekit is fencekit's lease package: Acquire (one try), AcquireWait (its
// blocking acquire: release notifications, else the holder's remaining TTL
// plus up to 10 ms of jitter) and Release. A lease renews itself (its
// heartbeat, every TTL/3); there is no explicit renew call, so its Renew
// returns errors.ErrUnsupported and the renew benchmark drives the heartbeat
// instead (see BenchmarkLease).
type Fencekit struct{ C *lease.Client }

// NewFencekit returns the fencekit adapter; opts nil means the defaults.
func NewFencekit(c redis.UniversalClient, opts *lease.Options) (Fencekit, error) {
	lc, err := redislease.New(c, opts)
	return Fencekit{C: lc}, err
}

func (Fencekit) Name() string     { return "fencekit" }
func (Fencekit) AutoRenews() bool { return true }

func (f Fencekit) TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	l, err := f.C.Acquire(ctx, key, ttl)
	if errors.Is(err, lease.ErrNotAcquired) {
		return nil, ErrHeld
	}
	if err != nil {
		return nil, err
	}
	return fencekitHeld{l}, nil
}

func (f Fencekit) AcquireWait(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	l, err := f.C.AcquireWait(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	return fencekitHeld{l}, nil
}

type fencekitHeld struct{ l *lease.Lease }

// Renew is not part of fencekit's API: the lease's heartbeat renews it.
func (fencekitHeld) Renew(context.Context, time.Duration) error {
	return fmt.Errorf("bench: fencekit leases renew themselves: %w", errors.ErrUnsupported)
}

func (h fencekitHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }
