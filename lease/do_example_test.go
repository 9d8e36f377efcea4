package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease/redislease"
)

// Do is the whole pattern in one call: wait for the lease, run the work
// under it with its token, release. A loss while the work ran is an error
// matching lease.ErrLost and fence.ErrFencedOut.
func ExampleClient_Do() {
	rdb, name, done := exampleRedis("ExampleClient_Do", "nightly-report")
	defer done()
	leases, err := redislease.New(rdb, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = leases.Do(context.Background(), name, 10*time.Second, func(ctx context.Context, tok fence.Token) error {
		return writeReport(ctx, tok) // with sqlfence or blobfence, presenting tok
	})
	if errors.Is(err, fence.ErrFencedOut) {
		fmt.Println("another worker took over: do not retry")
		return
	}
	fmt.Println("report written:", err == nil)
	// Output:
	// report written: true
}

// TryDo is the form for cron jobs: every worker fires on the schedule, the
// one that gets the lease runs the job, the others skip the round.
func ExampleClient_TryDo() {
	rdb, name, done := exampleRedis("ExampleClient_TryDo", "hourly-cleanup")
	defer done()
	leases, err := redislease.New(rdb, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	running, finish, worker1 := make(chan struct{}), make(chan struct{}), make(chan bool)
	go func() {
		ran, _ := leases.TryDo(ctx, name, 10*time.Second, func(ctx context.Context, tok fence.Token) error {
			close(running) // worker 1 runs this round's job
			<-finish
			return nil
		})
		worker1 <- ran
	}()
	<-running
	ran, err := leases.TryDo(ctx, name, 10*time.Second, func(ctx context.Context, tok fence.Token) error {
		return nil // not reached: the job is running
	})
	fmt.Println("worker 2 ran the job:", ran, err)
	close(finish)
	fmt.Println("worker 1 ran the job:", <-worker1)
	// Output:
	// worker 2 ran the job: false <nil>
	// worker 1 ran the job: true
}

// Campaign elects one leader among the processes campaigning for a name;
// here three candidates in one process each lead one term and step down.
func ExampleClient_Campaign() {
	rdb, name, done := exampleRedis("ExampleClient_Campaign", "scheduler")
	defer done()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		mu    sync.Mutex
		terms []fence.Token
		wg    sync.WaitGroup
	)
	for range 3 {
		leases, err := redislease.New(rdb, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		wg.Go(func() {
			led := false
			leases.Campaign(ctx, name, 5*time.Second, func(lctx context.Context, tok fence.Token) error {
				if led {
					return nil // one term each: step down again
				}
				led = true
				mu.Lock()
				terms = append(terms, tok)
				if len(terms) == 3 {
					stop()
				}
				mu.Unlock()
				return nil // step down: another candidate takes over
			})
		})
	}
	wg.Wait()
	fmt.Println("terms:", len(terms))
	fmt.Println("each token larger than the last:", terms[0] < terms[1] && terms[1] < terms[2])
	// Output:
	// terms: 3
	// each token larger than the last: true
}

// writeReport stands for the program's fenced write.
func writeReport(ctx context.Context, tok fence.Token) error { return ctx.Err() }
