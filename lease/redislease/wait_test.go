package redislease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestAcquireWaitHandOffOnRelease(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("handoff")
	holder := mustAcquire(t, c, name, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type result struct {
		l   *lease.Lease
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		l, err := c.AcquireWait(ctx, name, 10*time.Second)
		got <- result{l, err, time.Now()}
	}()
	waitMarked(t, env.Client, name) // the waiter was refused
	select {
	case r := <-got:
		t.Fatalf("AcquireWait returned while held: %v", r.err)
	default:
	}
	released := time.Now()
	release(t, holder)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Woken by the release notification, not by the holder's 10s TTL.
	if d := r.at.Sub(released); d > 2*time.Second {
		t.Fatalf("hand-off took %v after release, the notification was missed", d)
	} else {
		t.Logf("hand-off %v after release", d)
	}
	if r.l.Token() <= holder.Token() {
		t.Fatalf("token %v not above %v", r.l.Token(), holder.Token())
	}
	release(t, r.l)
}

func TestAcquireWaitManyWaitersTakeTurns(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("turns")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const workers, rounds = 6, 5
	var (
		mu      sync.Mutex
		holding int
		tokens  []fence.Token
		wg      sync.WaitGroup
	)
	errs := make(chan error, workers*rounds)
	for range workers {
		wg.Go(func() {
			for range rounds {
				l, err := c.AcquireWait(ctx, name, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				holding++
				if holding != 1 {
					errs <- errors.New("two holders at once")
				}
				tokens = append(tokens, l.Token())
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				holding--
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(tokens) != workers*rounds {
		t.Fatalf("%d grants, want %d", len(tokens), workers*rounds)
	}
	if err := fencetest.VerifyHistory(name, tokens); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] == tokens[i-1] {
			t.Fatalf("token %v issued twice", tokens[i])
		}
	}
}

func TestAcquireWaitBoundedByContext(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("bounded")
	base := warmBase(t, c, name)
	holder := mustAcquire(t, c, name, 10*time.Second)
	defer release(t, holder)
	defer testenv.CheckGoroutines(t, base) // the subscriptions are closed
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.AcquireWait(ctx, name, time.Second)
	var na *lease.NotAcquiredError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &na) || na.Holder != holder.Token() {
		t.Fatalf("AcquireWait = %v, want DeadlineExceeded and the holder's NotAcquiredError", err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c.AcquireWait(done, name, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireWait(cancelled) = %v", err)
	}
	// Redis dropped the waiter's subscription too (it closes with the
	// connection, which the server notices a moment later).
	channel := keysOf(name).channel
	var subs map[string]int64
	for range 200 {
		if subs, err = env.Client.PubSubNumSub(context.Background(), channel).Result(); err == nil && subs[channel] == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("PUBSUB NUMSUB %s = %v, %v after AcquireWait returned, want 0", channel, subs, err)
}

func TestAcquireWaitPausedRedisReturns(t *testing.T) {
	// A Redis that accepts connections but never answers (SIGSTOP) must not
	// hold AcquireWait forever when ctx has no deadline: the subscription's
	// connection handshake and the attempt give up at the client's
	// ReadTimeout, and the attempt's error is returned.
	srv := testenv.StartRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := mustNew(t, rdb, nil)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Resume() })
	ctx, cancel := context.WithCancel(context.Background()) // no deadline
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.AcquireWait(ctx, "paused", 300*time.Millisecond)
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil || errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("AcquireWait on a paused Redis = %v, want a Redis error", err)
		}
		t.Logf("AcquireWait on a paused Redis: %v", err)
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatal("AcquireWait still blocked 15s after Redis was paused (TTL 300ms, ReadTimeout 200ms)")
	}
}
