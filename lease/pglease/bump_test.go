package pglease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestBump: after Bump (New's and NewAdvisory's) to a token half a second ahead
// of the server's clock, the next grant is above it; a second Bump to a lower
// token changes nothing; a held name is refused and keeps its token.
func TestBump(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range []struct {
		mode string
		new  func(*pgxpool.Pool, *lease.Options) (*lease.Client, error)
	}{{"table", New}, {"advisory", NewAdvisory}} {
		t.Run(m.mode, func(t *testing.T) {
			cl, err := m.new(env.Pool, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close(ctx)
			l, err := cl.Acquire(ctx, "job", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			first := l.Token()
			to := fence.Token(time.Now().Add(leasearg.MaxAhead / 2).UnixMicro())
			if _, _, err := cl.Bump(ctx, "job", to); err == nil || errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), first.String()) {
				t.Errorf("bump of a held name: %v, want an error naming the holder's token %v", err, first)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			before, after, err := cl.Bump(ctx, "job", to)
			if err != nil || before != first || after != to {
				t.Fatalf("bump to %v = %v, %v, %v; want %v, %v", to, before, after, err, first, to)
			}
			if before, after, err := cl.Bump(ctx, "job", to/2); err != nil || before != to || after != to {
				t.Errorf("bump down to %v = %v, %v, %v; want the token kept at %v", to/2, before, after, err, to)
			}
			if before, after, err := cl.Bump(ctx, "fresh", to); err != nil || before != 0 || after != to {
				t.Errorf("bump of a new name = %v, %v, %v; want 0, %v", before, after, err, to)
			}
			for _, name := range []string{"job", "fresh"} {
				l, err := cl.Acquire(ctx, name, 10*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if l.Token() <= to {
					t.Errorf("%s: token after the bump %v, want above %v", name, l.Token(), to)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// countTracer counts the queries a pool sends.
type countTracer struct{ n atomic.Int64 }

func (c *countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestConstructorsRefuseBadInput: New and NewAdvisory given a nil pool or
// a bad prefix return one clear ErrInvalid and send nothing. (The
// operator calls' bad input: leasetest's BadInputSendsNothing.)
func TestConstructorsRefuseBadInput(t *testing.T) {
	env := testenv.Postgres(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	tracer := &countTracer{}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	fns := map[string]func(pool *pgxpool.Pool, prefix string) error{
		"New": func(p *pgxpool.Pool, prefix string) error {
			_, err := New(p, &lease.Options{KeyPrefix: prefix})
			return err
		},
		"NewAdvisory": func(p *pgxpool.Pool, prefix string) error {
			_, err := NewAdvisory(p, &lease.Options{KeyPrefix: prefix})
			return err
		},
	}
	cases := map[string]error{}
	for what, f := range fns {
		cases[what+" nil pool"] = f(nil, "")
		for _, prefix := range []string{"a b", "x{", "a\x00", strings.Repeat("p", 65)} {
			cases[what+" prefix "+prefix] = f(pool, prefix)
		}
	}
	leasetest.CheckInvalid(t, "pglease", cases)
	if n := tracer.n.Load(); n != 0 {
		t.Errorf("%d queries sent for bad input, want none", n)
	}
}

// TestAdvisoryBumpRacingFirstGrant: an advisory Bump racing the first grant
// of a name (no row yet) leaves the grant's token in the row, or its own
// below the grant's: the row's token is the holder's, so that Inspect names
// the holder and ForceRelease(name, its token) ends it. Both statements wait
// on an uncommitted row of the name, then race; the test repeats until the
// grant has won the race at least 3 times (when Bump wins, the grant's
// token is above Bump's by the grant's rule).
func TestAdvisoryBumpRacingFirstGrant(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := NewAdvisory(poolNamed(t, env.URL, "fencekit-bump-race-acquire"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(ctx)
	op, err := NewAdvisory(poolNamed(t, env.URL, "fencekit-bump-race-bump"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	waiting := func(app string) bool {
		var n int
		err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n)
		return err == nil && n == 1
	}
	grantWon := 0
	for i := 0; grantWon < 3; i++ {
		if i == 40 {
			t.Skipf("the grant won the race %d times in %d rounds; want 3", grantWon, i)
		}
		name := fmt.Sprintf("bump-race-%d", i)
		blocker, err := env.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blocker.Exec(ctx, `INSERT INTO fencekit_leases_advisory (name, token) VALUES ($1, 1)`, "fencekit:"+name); err != nil {
			t.Fatal(err)
		}
		to := fence.Token(time.Now().Add(leasearg.MaxAhead / 2).UnixMicro())
		bumped := make(chan error, 1)
		go func() {
			_, _, err := op.Bump(ctx, name, to)
			bumped <- err
		}()
		testenv.Poll(t, 10*time.Second, "Bump waits on the uncommitted row", func() bool { return waiting("fencekit-bump-race-bump") })
		acquired := make(chan *lease.Lease, 1)
		go func() {
			l, err := cl.Acquire(ctx, name, time.Minute)
			if err != nil {
				t.Error(err)
			}
			acquired <- l
		}()
		testenv.Poll(t, 10*time.Second, "Acquire waits on the uncommitted row", func() bool { return waiting("fencekit-bump-race-acquire") })
		if err := blocker.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-acquired
		berr := <-bumped
		if l == nil {
			t.FailNow()
		}
		if l.Token() < to {
			grantWon++
			if berr == nil {
				t.Errorf("round %d: Bump(%v) of a name held by token %v succeeded", i, to, l.Token())
			}
		}
		info, err := cl.Inspect(ctx, name)
		if err != nil || !info.Held || info.Holder != l.Token() {
			t.Fatalf("round %d: Inspect = %+v, %v; want held by the grant's token %v (Bump to %v: %v)", i, info, err, l.Token(), to, berr)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
