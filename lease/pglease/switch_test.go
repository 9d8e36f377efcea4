package pglease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestSwitchIssuers moves a job from Redis to PostgreSQL and back, as a
// deployment that changes its lease store does: every new holder's fenced
// write through sqlfence is accepted (the two issuers' tokens are both
// max(counter + 1, server time in µs), so they compare), and the previous
// holder's late write is refused.
func TestSwitchIssuers(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	rd := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	onRedis, err := redislease.New(rd.Client, quiet)
	if err != nil {
		t.Fatal(err)
	}
	onPostgres, err := New(pg.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	name := rd.Name("job") // the same lease name on both issuers
	var previous fence.Token
	for i, issuer := range []*lease.Client{onRedis, onPostgres, onRedis, onPostgres} {
		l, err := issuer.Acquire(ctx, name, 10*time.Second)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		err = sqlfence.InTx(l.Context(), pg.Pool, "job", l.Token(), func(pgx.Tx) error { return nil })
		if err != nil {
			t.Fatalf("step %d: the new holder's write (token %v after %v) was refused: %v", i, l.Token(), previous, err)
		}
		if previous != 0 {
			err := sqlfence.InTx(ctx, pg.Pool, "job", previous, func(pgx.Tx) error { return nil })
			if !errors.Is(err, fence.ErrStale) {
				t.Fatalf("step %d: the previous holder's late write: %v, want refused as stale", i, err)
			}
		}
		previous = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
