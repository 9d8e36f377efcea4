package zklease_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/zklease"
)

// Leases from ZooKeeper: the TTL is the session timeout, tokens follow the
// leader's clock in µs (they grow with time, not by one), and a waiter is
// woken by the release through a watch. The connection is to the
// ensemble at FENCEKIT_ZOOKEEPER (comma-separated host:port, default
// 127.0.0.1:2181).
func ExampleNew() {
	servers := exampleServers()
	const ttl = 10 * time.Second
	conn, _, err := zk.Connect(servers, ttl)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("example-%x", rand.Uint64()) // unique to this run
	defer removeExampleNodes(servers, prefix)

	leases, err := zklease.New(conn, &lease.Options{KeyPrefix: prefix, Identity: "worker-1"})
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

// The storage refuses every holder as stale (it saw tokens above the
// name's: the leader's clock was behind): raise the name's tokens past the
// highest token the storage saw.
func Example_bump() {
	servers := exampleServers()
	conn, _, err := zk.Connect(servers, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("example-%x", rand.Uint64()) // unique to this run
	defer removeExampleNodes(servers, prefix)

	leases, err := zklease.New(conn, &lease.Options{KeyPrefix: prefix})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer leases.Close(ctx)
	const seen = fence.Token(1_796_107_771_504_850) // e.g. from fencectl pg-status
	if _, _, err := leases.Bump(ctx, "invoices", seen); err != nil {
		fmt.Println(err)
		return
	}
	l, err := leases.Acquire(ctx, "invoices", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("above the old issuer's tokens:", l.Token() > seen)
	// Output:
	// above the old issuer's tokens: true
}

// exampleServers is the ensemble the examples use: FENCEKIT_ZOOKEEPER,
// comma-separated host:port, default 127.0.0.1:2181.
func exampleServers() []string {
	addrs := os.Getenv("FENCEKIT_ZOOKEEPER")
	if addrs == "" {
		addrs = "127.0.0.1:2181"
	}
	return strings.Split(addrs, ",")
}

// removeExampleNodes deletes the nodes an example created under prefix.
func removeExampleNodes(servers []string, prefix string) {
	if err := testenv.ZooKeeperDeleteTree(servers, "/"+prefix); err != nil {
		fmt.Fprintln(os.Stderr, "zklease example: clean up:", err)
	}
}
