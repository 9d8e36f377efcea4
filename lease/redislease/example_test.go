package redislease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// New makes the lease client on a go-redis client (here the Redis at
// FENCEKIT_REDIS_ADDR, default 127.0.0.1:6379); Options.Identity names the
// holder for Inspect, fencectl and the logs.
func ExampleNew() {
	addr := os.Getenv("FENCEKIT_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()

	leases, err := redislease.New(rdb, &lease.Options{Identity: "billing-7f9c/1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer leases.Close(ctx)
	name := fmt.Sprintf("example-invoices-%x", rand.Uint64())                   // unique to this run
	defer rdb.Del(ctx, "fencekit:{"+name+"}:lock", "fencekit:{"+name+"}:token") // the package doc's keys
	l, err := leases.Acquire(ctx, name, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	info, _ := leases.Inspect(ctx, name)
	fmt.Println("held by", info.Identity, "with the lease's token:", info.Holder == l.Token())

	_, err = leases.Acquire(ctx, name, 10*time.Second)
	fmt.Println("second Acquire refused:", errors.Is(err, lease.ErrNotAcquired))
	// Output:
	// held by billing-7f9c/1 with the lease's token: true
	// second Acquire refused: true
}
