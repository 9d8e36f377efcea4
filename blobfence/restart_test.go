package blobfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// TestServerRestart stops the S3 server: every call fails with an error
// (none hangs, none claims success or a stale verdict it cannot know), and
// after the restart writes succeed again and a stale token is still
// refused, because the token lives with the object on the server's disk.
func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	srv, s := privateServerStore(t)
	for tok := fence.Token(1); tok <= 5; tok++ {
		if err := s.Put(ctx, "k", []byte(fmt.Sprint("v", tok)), tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	down := map[string]func(context.Context) error{
		"newer put": func(ctx context.Context) error { return s.Put(ctx, "k", []byte("v6"), 6) },
		"delete":    func(ctx context.Context) error { return s.Delete(ctx, "k", 9) },
		"get":       func(ctx context.Context) error { _, _, err := s.Get(ctx, "k"); return err },
	}
	for name, call := range down {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := call(cctx)
		cancel()
		if err == nil || errors.Is(err, fence.ErrStale) || !strings.HasPrefix(err.Error(), "blobfence: ") {
			t.Errorf("%s with the server down: err = %v; want a blobfence error, not a verdict", name, err)
		}
	}
	// A stale put is refused from the version the store remembers (token
	// 5 was accepted; tokens only go up), with no request.
	if err := s.Put(ctx, "k", []byte("v3"), 3); !errors.Is(err, fence.ErrStale) {
		t.Errorf("stale put with the server down: err = %v; want stale, from the remembered version", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var se *fence.StaleError
	if err := s.Put(ctx, "k", []byte("v3"), 3); !errors.As(err, &se) || se.Current != 5 {
		t.Fatalf("stale put after the restart: %v; want StaleError with current 5", err)
	}
	if err := s.Put(ctx, "k", []byte("v7"), 7); err != nil {
		t.Fatalf("put after the restart: %v", err)
	}
	wantStored(t, s, "k", "v7", 7)
}

// TestServerKilledMidRun SIGKILLs the server while four writers put with
// increasing tokens, and starts it again. Writes fail while it is down and
// succeed afterwards; the object ends with a token at least as new as
// every acknowledged write, and older tokens are refused.
func TestServerKilledMidRun(t *testing.T) {
	ctx := context.Background()
	srv, s := privateServerStore(t)
	var next atomic.Uint64
	var maxAcked, failedWhileDown, okAfter atomic.Int64
	var phase atomic.Int32 // 0 up, 1 down, 2 up again
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; i < 10_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tok := fence.Token(next.Add(1))
				p := phase.Load()
				cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				err := s.Put(cctx, "k", []byte(fmt.Sprintf("writer %d token %d", w, tok)), tok)
				cancel()
				switch {
				case err == nil:
					for {
						m := maxAcked.Load()
						if int64(tok) <= m || maxAcked.CompareAndSwap(m, int64(tok)) {
							break
						}
					}
					if p == 2 {
						okAfter.Add(1)
					}
				case p == 1 && phase.Load() == 1:
					failedWhileDown.Add(1)
				}
				if err != nil && !strings.HasPrefix(err.Error(), "blobfence: ") {
					t.Errorf("writer %d token %d: %v", w, tok, err)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // let writes land before the kill
	phase.Store(1)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // writers fail against the dead port
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	phase.Store(2)
	deadline := time.Now().Add(30 * time.Second)
	for okAfter.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failedWhileDown.Load() == 0 || okAfter.Load() < 20 {
		t.Fatalf("%d writes failed while down, %d succeeded after the restart; want some and at least 20",
			failedWhileDown.Load(), okAfter.Load())
	}
	_, final := mustGet(t, s, "k")
	if int64(final) < maxAcked.Load() {
		t.Fatalf("final token %d is older than acknowledged token %d: a stale write landed", final, maxAcked.Load())
	}
	if err := s.Put(ctx, "k", []byte("late"), final-1); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("put with token %d under %d: %v; want ErrStale", final-1, final, err)
	}
	t.Logf("%d tokens issued, %d failed while down, %d acknowledged after restart, final token %d",
		next.Load(), failedWhileDown.Load(), okAfter.Load(), final)
}

// privateServerStore starts a private versitygw that the test may stop,
// kill and restart, and returns it with a store on a new bucket of it.
func privateServerStore(t *testing.T) (*testenv.S3Server, *blobfence.Store) {
	srv := testenv.StartS3Server(t)
	client := srv.Client()
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("fenced")}); err != nil {
		t.Fatal(err)
	}
	return srv, mustNew(t, client, "fenced", nil)
}
