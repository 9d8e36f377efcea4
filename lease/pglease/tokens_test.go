package pglease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
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
				if err := sqlfence.Fence(ctx, env.Pool, "job", l.Token()); err != nil {
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
			if err := sqlfence.Fence(ctx, env.Pool, "job", l.Token()); err != nil {
				t.Fatalf("new holder's write: %v", err)
			}
			if err := sqlfence.Fence(ctx, env.Pool, "job", last); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("former holder's late write: %v, want refused as stale", err)
			}
		})
	}
}
