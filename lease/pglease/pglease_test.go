package pglease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Migrate creates fencekit_leases in the schema of pool's search_path, from
// the migration files themselves.
func Migrate(t testing.TB, pool *pgxpool.Pool) { testenv.MigrateLeases(t, pool) }

// newBackend returns a backend on a fresh schema.
func newBackend(t *testing.T) *backend {
	t.Helper()
	env := testenv.Postgres(t)
	Migrate(t, env.Pool)
	b := &backend{pool: env.Pool, prefix: "t", logger: slog.New(slog.DiscardHandler)}
	b.listener.b = b
	return b
}

func TestBackendAcquireRenewRelease(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	g1, err := b.Acquire(ctx, "a", 10*time.Second, "me")
	if err != nil || g1.Token < 1<<50 {
		t.Fatalf("first grant: %+v, %v; want a token from the server's clock (µs)", g1, err)
	}
	_, err = b.Acquire(ctx, "a", time.Second, "me")
	var na *lease.NotAcquiredError
	var lost *lease.LostError
	if !errors.As(err, &na) || na.Holder != g1.Token || na.Identity != "me" || na.Remaining <= 9*time.Second || na.Remaining > 10*time.Second {
		t.Fatalf("held: err %v, want held by token %v for about 10s", err, g1.Token)
	}
	if info, err := b.Inspect(ctx, "a"); err != nil || info != (lease.Info{Held: true, Holder: g1.Token, Identity: "me", Remaining: info.Remaining, Last: g1.Token}) {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if err := b.Release(ctx, g1); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if info, err := b.Inspect(ctx, "a"); err != nil || info != (lease.Info{Last: g1.Token}) {
		t.Fatalf("Inspect after release: %+v, %v", info, err)
	}
	if err := b.Release(ctx, g1); !errors.As(err, &lost) || lost.Cause != lease.CauseMissing {
		t.Fatalf("second Release: %v, want CauseMissing", err)
	}
	g2, err := b.Acquire(ctx, "a", 10*time.Second, "me")
	if err != nil || g2.Token <= g1.Token {
		t.Fatalf("grant after release: %+v, %v; want a token above %v", g2, err, g1.Token)
	}

	// A batch: one renewed, one released and granted again (stolen), one
	// expired and taken over (stolen), one never granted (missing), in one
	// statement.
	short, err := b.Acquire(ctx, "b", 20*time.Millisecond, "me")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if errs := b.Renew(ctx, []*lease.Grant{short}); len(errs) != 1 || !errors.As(errs[0], &lost) || lost.Cause != lease.CauseMissing {
		t.Fatalf("renew of an expired grant: %v, want CauseMissing", errs)
	}
	if _, err := b.Acquire(ctx, "b", 10*time.Second, "me"); err != nil {
		t.Fatalf("grant after expiry: %v", err)
	}
	batch := []*lease.Grant{g2, g1, short, {Name: "never", Token: 7, TTL: time.Second}}
	errs := b.Renew(ctx, batch)
	want := []string{"", lease.CauseStolen, lease.CauseStolen, lease.CauseMissing}
	leasetest.CheckRenew(t, batch, errs, want)
	if err := b.Release(ctx, short); !errors.As(err, &lost) || lost.Cause != lease.CauseStolen {
		t.Fatalf("Release of a taken-over grant: %v, want CauseStolen", err)
	}
}

// TestBackendRacingAcquires checks that of many concurrent grants of one
// free name exactly one wins, and that the losers name the winner.
func TestBackendRacingAcquires(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	var last fence.Token
	for round := range 5 {
		var wins atomic.Int32
		var winner atomic.Uint64
		var wg sync.WaitGroup
		var mu sync.Mutex
		var holders []fence.Token
		for range 12 {
			wg.Go(func() {
				g, err := b.Acquire(ctx, "race", 10*time.Second, "me")
				var na *lease.NotAcquiredError
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(uint64(g.Token))
				case errors.As(err, &na):
					mu.Lock()
					holders = append(holders, na.Holder)
					mu.Unlock()
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || fence.Token(winner.Load()) <= last {
			t.Fatalf("round %d: %d winners, token %d; want 1 winner with a token above %d", round, wins.Load(), winner.Load(), last)
		}
		last = fence.Token(winner.Load())
		for _, h := range holders {
			if h != 0 && h != fence.Token(winner.Load()) {
				t.Fatalf("a loser saw holder %v, the winner is %v", h, winner.Load())
			}
		}
		if err := b.Release(ctx, &lease.Grant{Name: "race", Token: fence.Token(winner.Load()), TTL: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatch checks that a release wakes a waiter of that name only, and
// that the listener connection closes with the last Watch.
func TestWatch(t *testing.T) {
	b := newBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wa, err := b.Watch(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	wb, err := b.Watch(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Acquire(ctx, "a", 10*time.Second, "me")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := wa.Wait(ctx); err != nil {
		t.Fatalf("waiter of a: %v", err)
	}
	short, c2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer c2()
	if err := wb.Wait(short); err == nil {
		t.Fatal("waiter of b woken by a's release")
	}
	wa.Close()
	wb.Close()
	wb.Close() // twice is harmless
	b.listener.mu.Lock()
	defer b.listener.mu.Unlock()
	if b.listener.stop != nil || b.listener.refs != 0 {
		t.Fatalf("listener still running after the last Close: refs %d", b.listener.refs)
	}
}

func TestNewInvalid(t *testing.T) {
	if _, err := New(nil, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
	env := testenv.Postgres(t)
	if _, err := New(env.Pool, &lease.Options{KeyPrefix: "a b"}); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("bad prefix: %v, want ErrInvalid", err)
	}
}
