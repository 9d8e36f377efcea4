package redislease

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestAcquireWaitKeepsStoreError: with Redis unreachable and go-redis's
// retries outlasting ctx (its default MaxRetries), AcquireWait's error
// still carries the network error, not only ctx's end.
func TestAcquireWaitKeepsStoreError(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: closedAddr(t), MinRetryBackoff: 200 * time.Millisecond, MaxRetryBackoff: time.Second})
	t.Cleanup(func() { rdb.Close() })
	c := mustNew(t, rdb, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.AcquireWait(ctx, "x", time.Second)
	var op *net.OpError
	if !errors.As(err, &op) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWait with Redis down: %v; want the network error (*net.OpError) and ctx's deadline", err)
	}
}

// TestLostErrorKeepsStoreError: Redis is killed during a lease; the
// LostError's Err carries the renewals' network error, not only the last
// renewal's deadline.
func TestLostErrorKeepsStoreError(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialerRetries: 1, MinRetryBackoff: 100 * time.Millisecond, MaxRetryBackoff: time.Second})
	t.Cleanup(func() { rdb.Close() })
	c := mustNew(t, rdb, nil)
	l := mustAcquire(t, c, "down", 3*time.Second)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost 10 s after Redis was killed")
	}
	var lost *lease.LostError
	var op *net.OpError
	if err := l.Err(); !errors.As(err, &lost) || !errors.As(lost.Err, &op) {
		t.Fatalf("lease lost with %v; want a LostError whose Err has the network error (*net.OpError)", err)
	}
}

// TestStoreErrorKeptWhole: a Redis error reaches the caller through the
// client's wrapping with its type (errors.As redis.Error) and its text
// whole, after one "lease: " that names the call.
func TestStoreErrorKeptWhole(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	c := mustNew(t, env.Client, nil)
	name := env.Name("wrongtype")
	if err := env.Client.HSet(ctx, "fencekit:{"+name+"}:token", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Acquire(ctx, name, time.Second)
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.Contains(rerr.Error(), "WRONGTYPE") {
		t.Fatalf("Acquire with a hash for the token key: %v; want Redis's error (redis.Error) naming WRONGTYPE", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, `lease: acquire "`+name+`": `) || !strings.HasSuffix(msg, rerr.Error()) || strings.Count(msg, "lease:") != 1 {
		t.Errorf("message %q; want `lease: acquire %q: ` and Redis's text whole", msg, name)
	}
}
