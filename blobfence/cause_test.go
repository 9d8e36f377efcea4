package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// stalled is an S3 client whose PUT waits until its context ends, then
// sends the request with it: a write still in flight when the lease ends.
type stalled struct {
	blobfence.S3API
	entered chan struct{}
}

func (s stalled) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	close(s.entered)
	<-ctx.Done()
	return s.S3API.PutObject(ctx, in, o...)
}

// TestLostLeaseCause: a lease lost (its Redis key deleted) while a put
// runs under its Context ends the put with an error that matches
// lease.ErrLost and fence.ErrFencedOut, not only context.Canceled. Before
// the fix the error said "context canceled" and matched neither.
func TestLostLeaseCause(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.Redis(t)
	leases, err := redislease.New(rdb.Client, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := rdb.Name("report")
	l, err := leases.Acquire(ctx, name, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	env := testenv.S3(t)
	c := stalled{S3API: env.Client, entered: make(chan struct{})}
	s := mustNew(t, c, env.Bucket, nil)
	done := make(chan error, 1)
	go func() { done <- s.Put(l.Context(), "report.csv", []byte("data"), l.Token()) }()
	<-c.entered
	if err := rdb.Client.Del(ctx, "fencekit:{"+name+"}:lock").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the put did not end after the lease was lost")
	}
	if !errors.Is(err, lease.ErrLost) || !errors.Is(err, fence.ErrFencedOut) || !errors.Is(err, context.Canceled) {
		t.Fatalf("put cut off by a lost lease: %v; want it to match lease.ErrLost, fence.ErrFencedOut and context.Canceled", err)
	}
	if n := strings.Count(err.Error(), env.Bucket+"/report.csv"); n != 1 {
		t.Errorf("the error names the object %d times: %v", n, err)
	}
	t.Log(err)
}
