package etcdlease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/etcdlease"
)

// Leases from etcd: TTLs are whole seconds, tokens are revisions (they
// increase with every write of the cluster, not by one), and a waiter is
// woken by the release through a watch. The client is the cluster at
// FENCEKIT_ETCD_ENDPOINTS (comma-separated client URLs, default
// http://127.0.0.1:2379).
func ExampleNew() {
	endpoints := os.Getenv("FENCEKIT_ETCD_ENDPOINTS")
	if endpoints == "" {
		endpoints = "http://127.0.0.1:2379"
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := fmt.Sprintf("example-%x", rand.Uint64()) // unique to this run
	defer cli.Delete(ctx, prefix+"/", clientv3.WithPrefix())

	leases, err := etcdlease.New(cli, &lease.Options{KeyPrefix: prefix})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer leases.Close(ctx)
	_, err = leases.Acquire(ctx, "invoices", 1500*time.Millisecond)
	fmt.Println("1.5s refused, nothing sent:", errors.Is(err, lease.ErrInvalid))

	l, err := leases.Acquire(ctx, "invoices", 10*time.Second) // two round trips
	if err != nil {
		fmt.Println(err)
		return
	}
	got := make(chan *lease.Lease)
	go func() {
		l2, err := leases.AcquireWait(ctx, "invoices", 10*time.Second)
		if err != nil {
			fmt.Println(err)
		}
		got <- l2
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is refused, and watches
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	l2 := <-got
	fmt.Println("waiter's token greater:", l2.Token() > l.Token())
	info, err := leases.Inspect(ctx, "invoices")
	fmt.Println("held by the waiter:", err == nil && info.Held && info.Holder == l2.Token() && info.Last == l2.Token())
	// Output:
	// 1.5s refused, nothing sent: true
	// waiter's token greater: true
	// held by the waiter: true
}
