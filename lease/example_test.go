package lease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// exampleRedis gives an example a client of the Redis at FENCEKIT_REDIS_ADDR
// (default 127.0.0.1:6379), built as a program builds it, and a lease name
// unique to the run whose keys are deleted when the example ends.
func exampleRedis(example, suffix string) (rdb *redis.Client, name string, done func()) {
	addr := os.Getenv("FENCEKIT_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	name = fmt.Sprintf("%s-%x-%s", example, rand.Uint64(), suffix)
	return rdb, name, func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, "*"+name+"*").Result() // a few keys: the example's own
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	}
}

// The whole pattern: acquire, work under the lease's Context, present the
// token with every write, release.
func ExampleClient_Acquire() {
	rdb, name, done := exampleRedis("ExampleClient_Acquire", "invoices")
	defer done()
	leases, err := redislease.New(rdb, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	l, err := leases.Acquire(ctx, name, 10*time.Second)
	if errors.Is(err, lease.ErrNotAcquired) {
		fmt.Println("another worker is generating invoices")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(context.WithoutCancel(ctx))

	// The storage keeps the highest token it accepted and refuses older ones
	// (fence.Check here; sqlfence and blobfence do it in production).
	var newest fence.Token
	write := func(tok fence.Token) error {
		if err := fence.Check("invoices", tok, newest); err != nil {
			return err
		}
		newest = tok
		return nil
	}
	work := func(ctx context.Context, tok fence.Token) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx) // the lease is gone: stop
		}
		return write(tok)
	}
	fmt.Println("write:", work(l.Context(), l.Token()))

	// A writer holding an older grant is refused, however late it wakes up.
	err = write(l.Token() - 1)
	fmt.Println("stale write refused:", errors.Is(err, fence.ErrStale))

	fmt.Println("release:", l.Release(ctx))
	fmt.Println("after release:", l.Err())
	fmt.Println("work after release:", work(l.Context(), l.Token()))
	// Output:
	// write: <nil>
	// stale write refused: true
	// release: <nil>
	// after release: lease: released
	// work after release: lease: released
}

// AcquireWait blocks until the holder releases (or its TTL runs out).
func ExampleClient_AcquireWait() {
	rdb, name, done := exampleRedis("ExampleClient_AcquireWait", "reports")
	defer done()
	leases, err := redislease.New(rdb, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first, err := leases.AcquireWait(ctx, name, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		first.Release(ctx) // wakes the waiter at once, long before the TTL
	}()
	second, err := leases.AcquireWait(ctx, name, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("second token is larger:", second.Token() > first.Token())
	fmt.Println("first ended:", first.Err())
	fmt.Println(second.Release(ctx))
	// Output:
	// second token is larger: true
	// first ended: lease: released
	// <nil>
}

// Context ends, with the reason, as soon as the heartbeat learns that the
// lease is gone, here because someone deleted the key.
func ExampleLease_Context() {
	rdb, name, done := exampleRedis("ExampleLease_Context", "lost")
	defer done()
	leases, err := redislease.New(rdb, &lease.Options{RenewInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	l, err := leases.Acquire(ctx, name, 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	rdb.Del(ctx, "fencekit:{"+name+"}:lock") // an operator's mistake

	<-l.Context().Done() // at the next heartbeat, long before the 5s TTL
	var lost *lease.LostError
	fmt.Println(errors.Is(context.Cause(l.Context()), lease.ErrLost))
	fmt.Println(errors.As(l.Err(), &lost), lost.Cause)
	fmt.Println(errors.Is(l.Release(ctx), lease.ErrLost))
	// Output:
	// true
	// true missing
	// true
}

// An operator ends a stuck holder's lease, only if the token it saw
// still holds it: a newer holder is left alone.
func ExampleClient_ForceRelease() {
	rdb, name, done := exampleRedis("ExampleClient_ForceRelease", "stuck")
	defer done()
	leases, err := redislease.New(rdb, &lease.Options{Identity: "worker-3"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer leases.Close(ctx)
	stuck, err := leases.Acquire(ctx, name, 3*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, only := range []fence.Token{stuck.Token() + 1, stuck.Token()} { // the first does not hold it
		info, err := leases.ForceRelease(ctx, name, only)
		fmt.Println("held by", info.Identity, "released:", err == nil && info.Held && info.Holder == only)
	}
	<-stuck.Done() // at its next renewal
	fmt.Println(errors.Is(stuck.Err(), lease.ErrLost))
	// Output:
	// held by worker-3 released: false
	// held by worker-3 released: true
	// true
}

// After the store lost its tokens (a Redis restart without persistence),
// raise a name's tokens to the current time, then list the names.
func ExampleClient_Bump() {
	rdb, name, done := exampleRedis("ExampleClient_Bump", "orders")
	defer done()
	leases, err := redislease.New(rdb, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer leases.Close(ctx)

	now := fence.Token(time.Now().UnixMicro())
	before, after, err := leases.Bump(ctx, name, now)
	fmt.Println(before, after == now, err)
	names, err := leases.Names(ctx, name[:len(name)-len("orders")]+"*")
	fmt.Println(len(names) == 1 && names[0] == name, err)
	l, err := leases.Acquire(ctx, name, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)
	fmt.Println("next token above the bump:", l.Token() > after)
	// Output:
	// 0 true <nil>
	// true <nil>
	// next token above the bump: true
}
