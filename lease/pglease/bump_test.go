package pglease

import (
	"context"
	"errors"
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
