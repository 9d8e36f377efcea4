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

// TestSwitchIssuers does the switches docs/leases.md gives ("Switching
// issuers") on a PostgreSQL guard row: Redis and ZooKeeper tokens both
// follow the server's clock in µs, so a switch either way needs nothing:
// each new holder writes, and the earlier issuer's holder stays fenced out.
func TestSwitchIssuers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	renv, pg, zenv := testenv.Redis(t), testenv.PostgresMigrated(t), testenv.ZooKeeper(t)
	rc, err := redislease.New(renv.Client, &lease.Options{KeyPrefix: renv.Prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	zc, _ := newClient(t, zenv, zenv.Servers, 10*time.Second, "")
	const name, ttl = "jobs", 10 * time.Second

	write := func(l *lease.Lease) error { return sqlfence.Claim(ctx, pg.Pool, name, l.Token()) }
	var prev *lease.Lease
	for _, c := range []*lease.Client{rc, zc, rc} {
		l, err := c.Acquire(ctx, name, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(l); err != nil {
			t.Fatalf("token %v after the switch: %v", l.Token(), err)
		}
		if prev != nil {
			if err := write(prev); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("the earlier issuer's holder %v, late: %v, want stale", prev.Token(), err)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		prev = l
	}
}
