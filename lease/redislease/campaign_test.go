package redislease

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// term is one leader's term as lead saw it.
type term struct {
	who int
	tok fence.Token
}

func TestCampaignOneLeaderAtATimeAndTokensIncrease(t *testing.T) {
	_, env := newTestClient(t, nil)
	name := env.Name("campaign")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu      sync.Mutex
		terms   []term
		leaders atomic.Int32
	)
	const candidates, wantTerms = 3, 12
	var wg sync.WaitGroup
	errs := make([]error, candidates)
	for i := range candidates {
		c := mustNew(t, env.Client, nil) // one Client per candidate, as in separate processes
		wg.Go(func() {
			errs[i] = c.Campaign(ctx, name, 2*time.Second, func(lctx context.Context, tok fence.Token) error {
				if n := leaders.Add(1); n != 1 {
					t.Errorf("candidate %d leads while %d others do", i, n-1)
				}
				defer leaders.Add(-1)
				mu.Lock()
				terms = append(terms, term{i, tok})
				enough := len(terms) >= wantTerms
				mu.Unlock()
				if enough {
					cancel()
				}
				time.Sleep(5 * time.Millisecond) // some work, then step down
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("candidate %d: Campaign = %v, want nil (its ctx ended: a normal shutdown)", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[int]bool{}
	for i, tm := range terms {
		seen[tm.who] = true
		if i > 0 && tm.tok <= terms[i-1].tok {
			t.Errorf("term %d (candidate %d) has token %v, not above the previous term's %v", i, tm.who, tm.tok, terms[i-1].tok)
		}
	}
	if len(seen) < 2 {
		t.Errorf("only candidates %v led in %d terms: stepping down should let another win", seen, len(terms))
	}
	if _, free := freeNow(t, mustNew(t, env.Client, nil), name); !free {
		t.Error("the lease is still held after every Campaign returned")
	}
}

func TestCampaignDeposedLeaderCampaignsAgain(t *testing.T) {
	c, env := newTestClient(t, &lease.Options{RenewInterval: 20 * time.Millisecond})
	name := env.Name("deposed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terms := make(chan fence.Token, 4)
	causes := make(chan error, 4)
	done := make(chan error, 1)
	go func() {
		done <- c.Campaign(ctx, name, 5*time.Second, func(lctx context.Context, tok fence.Token) error {
			terms <- tok
			<-lctx.Done()
			causes <- context.Cause(lctx)
			return nil
		})
	}()
	first := <-terms
	if err := env.Client.Del(ctx, lockKeyOf(c, name)).Err(); err != nil {
		t.Fatal(err)
	}
	if cause := <-causes; !isLost(cause, lease.CauseMissing) {
		t.Fatalf("deposed leader's context cause = %v, want lost (missing)", cause)
	}
	second := <-terms // nobody else campaigns: it leads again
	if second <= first {
		t.Errorf("second term's token %v not above the first's %v", second, first)
	}
	cancel()
	if cause := <-causes; !errors.Is(cause, context.Canceled) {
		t.Errorf("lead's context cause after cancel = %v, want context.Canceled", cause)
	}
	if err := <-done; err != nil {
		t.Fatalf("Campaign = %v, want nil (its ctx ended: a normal shutdown)", err)
	}
	if _, free := freeNow(t, c, name); !free {
		t.Error("the lease is still held after Campaign returned")
	}
}

func TestCampaignFailingLeadStepsDown(t *testing.T) {
	_, env := newTestClient(t, nil)
	name := env.Name("failing")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bad, good := mustNew(t, env.Client, nil), mustNew(t, env.Client, nil)
	badTerms := make(chan fence.Token, 16)
	go bad.Campaign(ctx, name, time.Second, func(context.Context, fence.Token) error {
		badTerms <- 0
		return errors.New("my database is down")
	})
	<-badTerms // the failing candidate led first
	led := make(chan fence.Token, 1)
	go good.Campaign(ctx, name, time.Second, func(lctx context.Context, tok fence.Token) error {
		select {
		case led <- tok:
		default:
		}
		<-lctx.Done()
		return nil
	})
	select {
	case <-led:
	case <-time.After(20 * time.Second):
		t.Fatal("a healthy candidate never led while the leader's lead kept failing")
	}
}

// stoppedRedisClient returns a Client of a private Redis that is stopped
// (srv.Start brings it back) and the Client's log.
func stoppedRedisClient(t *testing.T) (*lease.Client, *testenv.RedisServer, *testenv.SyncBuffer) {
	srv := testenv.StartRedisServer(t)
	rdb := srv.Client(t)
	logs := &testenv.SyncBuffer{}
	c := mustNew(t, rdb, &lease.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	return c, srv, logs
}

func TestCampaignRetriesWhileRedisIsDown(t *testing.T) {
	c, srv, logs := stoppedRedisClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	led := make(chan fence.Token, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Campaign(ctx, "down", time.Second, func(lctx context.Context, tok fence.Token) error {
			led <- tok
			<-lctx.Done()
			return nil
		})
	}()
	for strings.Count(logs.String(), "attempt to lead failed") < 2 { // retried, not given up
		select {
		case err := <-done:
			t.Fatalf("Campaign returned while Redis was down: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Campaign returned while Redis was down: %v", err)
	default:
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-led:
	case <-time.After(20 * time.Second):
		t.Fatal("no term after Redis came back")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Campaign = %v, want nil (its ctx ended: a normal shutdown)", err)
	}
}

// TestCampaignEndedWhileFailingSaysWhy: a Campaign whose ctx ends while
// its attempts to lead are failing returns the last failure with ctx's
// error, not nil: that is no normal shutdown.
func TestCampaignEndedWhileFailingSaysWhy(t *testing.T) {
	c, _, logs := stoppedRedisClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- c.Campaign(ctx, "down", time.Second, func(context.Context, fence.Token) error { return nil })
	}()
	for !strings.Contains(logs.String(), "attempt to lead failed") {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	var opErr *net.OpError
	if err := <-done; !errors.Is(err, context.Canceled) || !errors.As(err, &opErr) {
		t.Fatalf("Campaign ended while Redis was down = %v; want context.Canceled and the connection error", err)
	}
}

func TestCampaignEndsWhenTheClientCloses(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("closed")
	led := make(chan context.Context, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Campaign(context.Background(), name, 5*time.Second, func(lctx context.Context, tok fence.Token) error {
			led <- lctx
			<-lctx.Done()
			return nil
		})
	}()
	lctx := <-led
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(lctx); !errors.Is(cause, lease.ErrReleased) {
		t.Errorf("lead's context cause after Close = %v, want ErrReleased", cause)
	}
	select {
	case err := <-done:
		if !errors.Is(err, lease.ErrClosed) {
			t.Fatalf("Campaign = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Campaign still running 10s after Close")
	}
	if _, free := freeNow(t, mustNew(t, env.Client, nil), name); !free {
		t.Error("the lease is still held after Close")
	}
}

func TestCampaignBadInputReturnsAtOnce(t *testing.T) {
	c, env := newTestClient(t, nil)
	lead := func(context.Context, fence.Token) error {
		t.Error("lead ran")
		return nil
	}
	ctx := context.Background()
	if err := c.Campaign(ctx, env.Name("a"), time.Second, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("nil lead: %v", err)
	}
	if err := c.Campaign(ctx, env.Name("a"), time.Microsecond, lead); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("bad TTL: %v", err)
	}
	if err := c.Campaign(ctx, "{a}", time.Second, lead); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
}
