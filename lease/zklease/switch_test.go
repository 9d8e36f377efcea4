package zklease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestSwitchIssuers does the migration docs/leases.md gives ("Switching
// issuers") on a PostgreSQL guard row: Redis tokens (µs since 1970) are far
// above ZooKeeper's zxids, so the first ZooKeeper holder is refused until
// the name is bumped past the highest token the guard saw; then it writes,
// the Redis-era holder stays fenced out, and a move back to Redis writes
// again.
func TestSwitchIssuers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	renv, pg, zenv := testenv.Redis(t), testenv.PostgresMigrated(t), testenv.ZooKeeper(t)
	rc, err := redislease.New(renv.Client, &lease.Options{KeyPrefix: renv.Prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	zc, conn := newClient(t, zenv, zenv.Servers, 10*time.Second, "")
	const name, ttl = "jobs", 10 * time.Second

	write := func(l *lease.Lease) error { return sqlfence.Fence(ctx, pg.Pool, name, l.Token()) }
	hold := func(c *lease.Client) *lease.Lease {
		t.Helper()
		l, err := c.Acquire(ctx, name, ttl)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Release(context.Background()) })
		return l
	}

	old := hold(rc)
	if err := write(old); err != nil {
		t.Fatal(err)
	}
	old.Release(ctx)

	// Switched without the bump: safe, but stuck.
	stuck := hold(zc)
	if err := write(stuck); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("ZooKeeper token %v after Redis's %v: %v, want stale", stuck.Token(), old.Token(), err)
	}
	stuck.Release(ctx)

	// The migration: bump the new issuer past the highest token the
	// storage saw (the guard row; the old issuer's Last would do too).
	var seen int64
	if err := pg.Pool.QueryRow(ctx, "SELECT token FROM fencekit_tokens WHERE resource = $1", name).Scan(&seen); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Bump(ctx, conn, prefixOf(zenv), name, fence.Token(seen)); err != nil {
		t.Fatal(err)
	}
	zl := hold(zc)
	if err := write(zl); err != nil {
		t.Fatalf("ZooKeeper token %v after the bump past %v: %v", zl.Token(), seen, err)
	}
	if err := write(old); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("the Redis-era holder's late write: %v, want stale", err)
	}
	zl.Release(ctx)

	// Back to Redis: its µs clock has moved on by more than the few
	// ZooKeeper transactions since the bump (docs/leases.md still says to
	// bump Redis past ZooKeeper's Last, for a move after many).
	back := hold(rc)
	if err := write(back); err != nil {
		t.Fatalf("Redis token %v after ZooKeeper's %v: %v", back.Token(), zl.Token(), err)
	}
}
