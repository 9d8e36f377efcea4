package pglease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestTokensSurviveLostRow loses the lease row in each way an operator or
// an incident can (the housekeeping that deletes expired rows, TRUNCATE, a
// restore of a dump taken before the last grants): the next grant's token
// is still above every token granted before, so the former holder's late
// write is refused by sqlfence after the new holder wrote.
func TestTokensSurviveLostRow(t *testing.T) {
	for _, c := range []struct {
		name string
		lose string // SQL; the dump case sets the first token granted
	}{
		{"expired rows deleted", `DELETE FROM fencekit_leases WHERE expires_at <= statement_timestamp()`},
		{"truncated", `TRUNCATE fencekit_leases`},
		{"older dump restored", `UPDATE fencekit_leases SET token = %d, expires_at = '-infinity'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testenv.PostgresMigrated(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl, err := New(env.Pool, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close(ctx)
			var dumped, last fence.Token
			for i := range 3 {
				l, err := cl.Acquire(ctx, "job", 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					dumped = l.Token()
				}
				last = l.Token()
				if err := sqlfence.Claim(ctx, env.Pool, "job", l.Token()); err != nil {
					t.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := env.Pool.Exec(ctx, strings.ReplaceAll(c.lose, "%d", dumped.String())); err != nil {
				t.Fatal(err)
			}
			l, err := cl.Acquire(ctx, "job", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			if l.Token() <= last {
				t.Fatalf("token after the row was lost: %v; want above %v, the last one granted", l.Token(), last)
			}
			if err := sqlfence.Claim(ctx, env.Pool, "job", l.Token()); err != nil {
				t.Fatalf("new holder's write: %v", err)
			}
			if err := sqlfence.Claim(ctx, env.Pool, "job", last); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("former holder's late write: %v, want refused as stale", err)
			}
		})
	}
}

// TestBumpAboveClockThenRowLost bumps a name 72 minutes past the server's
// clock, in both modes, then loses its row (TRUNCATE): the next grant must
// still be above every token issued and promised, or the bump must have
// been refused, changing nothing.
func TestBumpAboveClockThenRowLost(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range []struct {
		mode, table string
		new         func(*pgxpool.Pool, *lease.Options) (*lease.Client, error)
	}{{"table", "fencekit_leases", New}, {"advisory", "fencekit_leases_advisory", NewAdvisory}} {
		t.Run(m.mode, func(t *testing.T) {
			cl, err := m.new(env.Pool, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close(ctx)
			grant := func() fence.Token {
				t.Helper()
				l, err := cl.Acquire(ctx, "ahead", 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				return l.Token()
			}
			last := grant()
			far := fence.Token(time.Now().Add(72 * time.Minute).UnixMicro())
			before, after, err := cl.Bump(ctx, "ahead", far)
			switch {
			case err == nil:
				last = max(last, after) // promised: the next grant's token is above it
			case !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "ahead of the server's clock"):
				t.Fatalf("bump 72 minutes ahead: %v, %v, %v; want a refusal naming the clock", before, after, err)
			default:
				t.Log(err)
				if again, _, err := cl.Bump(ctx, "ahead", 1); err != nil || again != last {
					t.Fatalf("token after the refused bump: %v, %v; want %v", again, err, last)
				}
			}
			if _, err := env.Pool.Exec(ctx, "TRUNCATE "+m.table); err != nil {
				t.Fatal(err)
			}
			if tok := grant(); tok <= last {
				t.Fatalf("after the row was lost: token %v not above %v", tok, last)
			}
		})
	}
}
