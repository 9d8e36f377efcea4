package zklease_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/zklease"
)

// Leases from ZooKeeper: the TTL is the session timeout, tokens are zxids
// (they grow with every transaction of the ensemble, not by one), and a
// waiter is woken by the release through a watch.
func ExampleNew() {
	tb, done := testenv.ExampleTB("ExampleNew")
	defer done()
	env := testenv.ZooKeeper(tb) // FENCEKIT_ZOOKEEPER, or a server started for the test binary
	const ttl = 10 * time.Second
	conn, _, err := zk.Connect(env.Servers, ttl, zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx := context.Background()

	leases, err := zklease.New(conn, &lease.Options{KeyPrefix: strings.TrimPrefix(env.Root, "/"), Identity: "worker-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer leases.Close(ctx)
	l, err := leases.Acquire(ctx, "invoices", ttl) // two round trips
	if err != nil {
		fmt.Println(err)
		return
	}
	got := make(chan *lease.Lease)
	go func() {
		l2, err := leases.AcquireWait(ctx, "invoices", ttl)
		if err != nil {
			fmt.Println(err)
		}
		got <- l2
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is refused, queues and watches
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	l2 := <-got
	fmt.Println("waiter's token greater:", l2.Token() > l.Token())
	info, err := leases.Inspect(ctx, "invoices")
	fmt.Println("held by:", info.Identity, err == nil && info.Holder == l2.Token())
	// Output:
	// waiter's token greater: true
	// held by: worker-1 true
}

// Moving a name to ZooKeeper from Redis or PostgreSQL: their tokens are
// microseconds since 1970, far above zxids, so raise the name's tokens past
// the highest token the storage saw before the first grant.
func ExampleBump() {
	tb, done := testenv.ExampleTB("ExampleBump")
	defer done()
	env := testenv.ZooKeeper(tb)
	conn, _, err := zk.Connect(env.Servers, 10*time.Second, zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx := context.Background()
	prefix := strings.TrimPrefix(env.Root, "/")

	const seen = fence.Token(1_796_107_771_504_850) // e.g. from fencectl pg-status
	if _, _, err := zklease.Bump(ctx, conn, prefix, "invoices", seen); err != nil {
		fmt.Println(err)
		return
	}
	leases, err := zklease.New(conn, &lease.Options{KeyPrefix: prefix})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer leases.Close(ctx)
	l, err := leases.Acquire(ctx, "invoices", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("above the old issuer's tokens:", l.Token() > seen)
	// Output:
	// above the old issuer's tokens: true
}
