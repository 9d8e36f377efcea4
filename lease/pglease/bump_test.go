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
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// TestBump: after Bump (and BumpAdvisory) to a token half a second ahead
// of the server's clock, the next grant is above it; a second Bump to a lower
// token changes nothing; a held name is refused and keeps its token.
func TestBump(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range []struct {
		mode string
		new  func(*pgxpool.Pool, *lease.Options) (*lease.Client, error)
		bump func(context.Context, *pgxpool.Pool, string, string, fence.Token) (fence.Token, fence.Token, error)
	}{{"table", New, Bump}, {"advisory", NewAdvisory, BumpAdvisory}} {
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
			to := fence.Token(time.Now().Add(lease.MaxAhead / 2).UnixMicro())
			if _, _, err := m.bump(ctx, env.Pool, "", "job", to); err == nil || errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), first.String()) {
				t.Errorf("bump of a held name: %v, want an error naming the holder's token %v", err, first)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			before, after, err := m.bump(ctx, env.Pool, "", "job", to)
			if err != nil || before != first || after != to {
				t.Fatalf("bump to %v = %v, %v, %v; want %v, %v", to, before, after, err, first, to)
			}
			if before, after, err := m.bump(ctx, env.Pool, "", "job", to/2); err != nil || before != to || after != to {
				t.Errorf("bump down to %v = %v, %v, %v; want the token kept at %v", to/2, before, after, err, to)
			}
			if before, after, err := m.bump(ctx, env.Pool, "", "fresh", to); err != nil || before != 0 || after != to {
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

// TestOperatorFunctionsRefuseBadInput: every exported function given a nil
// pool, a bad prefix, name or token returns one clear ErrInvalid, does not
// panic and sends nothing.
func TestOperatorFunctionsRefuseBadInput(t *testing.T) {
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
	type fn func(pool *pgxpool.Pool, prefix, name string, to fence.Token) error
	fns := map[string]fn{
		"Names": func(p *pgxpool.Pool, prefix, _ string, _ fence.Token) error {
			_, err := Names(ctx, p, prefix, "*")
			return err
		},
		"AdvisoryNames": func(p *pgxpool.Pool, prefix, _ string, _ fence.Token) error {
			_, err := AdvisoryNames(ctx, p, prefix, "*")
			return err
		},
		"ForceRelease": func(p *pgxpool.Pool, prefix, name string, to fence.Token) error {
			_, err := ForceRelease(ctx, p, prefix, name, to)
			return err
		},
		"ForceReleaseAdvisory": func(p *pgxpool.Pool, prefix, name string, to fence.Token) error {
			_, err := ForceReleaseAdvisory(ctx, p, prefix, name, to)
			return err
		},
		"Bump": func(p *pgxpool.Pool, prefix, name string, to fence.Token) error {
			_, _, err := Bump(ctx, p, prefix, name, to)
			return err
		},
		"BumpAdvisory": func(p *pgxpool.Pool, prefix, name string, to fence.Token) error {
			_, _, err := BumpAdvisory(ctx, p, prefix, name, to)
			return err
		},
		"New": func(p *pgxpool.Pool, prefix, _ string, _ fence.Token) error {
			_, err := New(p, &lease.Options{KeyPrefix: prefix})
			return err
		},
		"NewAdvisory": func(p *pgxpool.Pool, prefix, _ string, _ fence.Token) error {
			_, err := NewAdvisory(p, &lease.Options{KeyPrefix: prefix})
			return err
		},
	}
	cases := map[string]error{}
	for what, f := range fns {
		cases[what+" nil pool"] = f(nil, "", "ok", 5)
		for _, prefix := range []string{"a b", "x{", "a\x00", strings.Repeat("p", 65)} {
			cases[what+" prefix "+prefix] = f(pool, prefix, "ok", 5)
		}
		if strings.Contains(what, "Names") || strings.HasPrefix(what, "New") {
			continue
		}
		for _, name := range []string{"", "a b", "a\x00", strings.Repeat("n", 513)} {
			cases[what+" name "+name] = f(pool, "", name, 5)
		}
		if strings.HasPrefix(what, "Bump") {
			cases[what+" to 0"] = f(pool, "", "ok", 0)
			cases[what+" to MaxToken"] = f(pool, "", "ok", valid.MaxToken)
		}
	}
	for _, p := range leasetest.BadPatterns {
		cases["Names pattern "+p] = func() error { _, err := Names(ctx, pool, "", p); return err }()
		cases["AdvisoryNames pattern "+p] = func() error { _, err := AdvisoryNames(ctx, pool, "", p); return err }()
	}
	leasetest.CheckInvalid(t, "pglease", cases)
	if n := tracer.n.Load(); n != 0 {
		t.Errorf("%d queries sent for bad input, want none", n)
	}
}
