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

// NoBatchDiag is fencekit with lease.Options.NoBatch: every call sent
// alone, as before calls of one Client shared round trips. It is a
// diagnostic of the batching (BenchmarkLease, BenchmarkSaturation,
// BenchmarkHandoff, BenchmarkTakeover), not a library.
const NoBatchDiag = "fencekit-nobatch"

func init() {
	newLockers["fencekit"] = func(c redis.UniversalClient) Locker { return mustFencekit(c, nil) }
	newLockers[NoBatchDiag] = func(c redis.UniversalClient) Locker {
		return mustFencekit(c, &lease.Options{NoBatch: true})
	}
}

// mustFencekit is NewFencekit for valid options: only a nil client fails,
// a bug of the harness.
func mustFencekit(c redis.UniversalClient, opts *lease.Options) Fencekit {
	f, err := NewFencekit(c, opts)
	if err != nil {
		panic(err)
	}
	return f
}

// Fencekit is fencekit's lease package: Acquire (one try), AcquireWait (its
// blocking acquire: release notifications, else the holder's remaining TTL
// plus up to 10 ms of jitter) and Release. A lease renews itself (its
// heartbeat, every TTL/3); there is no explicit renew call, so its Renew
// returns errors.ErrUnsupported and the renew benchmark drives the heartbeat
// instead (see BenchmarkLease).
type Fencekit struct {
	C       *lease.Client
	noBatch bool
}

// NewFencekit returns the fencekit adapter; opts nil means the defaults.
func NewFencekit(c redis.UniversalClient, opts *lease.Options) (Fencekit, error) {
	lc, err := redislease.New(c, opts)
	return Fencekit{C: lc, noBatch: opts != nil && opts.NoBatch}, err
}

func (f Fencekit) Name() string {
	if f.noBatch {
		return NoBatchDiag
	}
	return "fencekit"
}
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
