package redislease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// New makes the lease client on a go-redis client (here the test Redis,
// FENCEKIT_REDIS_ADDR); Options.Identity names the holder for Inspect,
// fencectl and the logs.
func ExampleNew() {
	tb, done := testenv.ExampleTB("ExampleNew")
	defer done()
	env := testenv.Redis(tb)
	rdb := redis.NewClient(&redis.Options{Addr: env.Addr, ContextTimeoutEnabled: true})
	defer rdb.Close()

	leases, err := redislease.New(rdb, &lease.Options{Identity: "billing-7f9c/1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer leases.Close(ctx)
	name := env.Name("invoices")
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
