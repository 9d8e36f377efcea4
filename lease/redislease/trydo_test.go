package redislease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// cron runs a job every period for rounds rounds on three workers (three
// clients, as three processes would be), each firing on the same schedule
// and calling run, and returns how many times the job ran for each round
// (counted by the round its worker fired for, so a late run under load
// cannot fall outside the slice). The job runs most of the period, so the
// workers' firings may spread by up to that much.
func cron(t *testing.T, run func(c *lease.Client, ctx context.Context, name string, fn func(context.Context, fence.Token) error) error) []int {
	t.Helper()
	const workers, rounds, period, work = 3, 8, 250 * time.Millisecond, 200 * time.Millisecond
	env := testenvRedisCounting(t)
	name := env.Name("cron")
	start := time.Now().Truncate(period).Add(2 * period)
	var mu sync.Mutex
	runs := make([]int, rounds)
	var wg sync.WaitGroup
	for range workers {
		c := mustNew(t, env.client, nil)
		wg.Go(func() {
			for r := range rounds {
				time.Sleep(time.Until(start.Add(time.Duration(r) * period)))
				err := run(c, context.Background(), name, func(ctx context.Context, tok fence.Token) error {
					mu.Lock()
					runs[r]++
					mu.Unlock()
					time.Sleep(work)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	return runs
}

// TestTryDoCronRunsEachRoundOnce: with TryDo, the workers that find the job
// running skip the round, so each round runs the job exactly once.
func TestTryDoCronRunsEachRoundOnce(t *testing.T) {
	runs := cron(t, func(c *lease.Client, ctx context.Context, name string, fn func(context.Context, fence.Token) error) error {
		_, err := c.TryDo(ctx, name, 5*time.Second, fn)
		return err
	})
	for r, n := range runs {
		if n != 1 {
			t.Errorf("round %d ran the job %d times, want once (runs per round: %v)", r, n, runs)
		}
	}
}

// TestDoCronRunsOnEveryWorker shows why TryDo exists: Do waits, so every
// worker runs every round's job, one after the other.
func TestDoCronRunsOnEveryWorker(t *testing.T) {
	runs := cron(t, func(c *lease.Client, ctx context.Context, name string, fn func(context.Context, fence.Token) error) error {
		return c.Do(ctx, name, 5*time.Second, fn)
	})
	total := 0
	for _, n := range runs {
		total += n
	}
	if total != 3*8 {
		t.Errorf("Do ran the job %d times over 8 rounds on 3 workers, want 24 (runs per round: %v)", total, runs)
	}
}
