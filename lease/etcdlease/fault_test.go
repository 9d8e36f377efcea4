package etcdlease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// grantLog records grants in the order their replies arrived and fails the
// test when a grant arrives while another lease's Context is still live, or
// when a token does not exceed the previous one.
type grantLog struct {
	t    *testing.T
	mu   sync.Mutex
	live []*lease.Lease
	last fence.Token
	n    int
}

func (g *grantLog) granted(l *lease.Lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.live {
		if o.Err() == nil {
			g.t.Errorf("token %v granted while token %v's Context is live", l.Token(), o.Token())
		}
	}
	if l.Token() <= g.last {
		g.t.Errorf("token %v after %v", l.Token(), g.last)
	}
	g.live = append(g.live[:0], l)
	g.last = l.Token()
	g.n++
}

// TestMemberFailures runs grants from three clients on one name of a
// 3-member cluster while members are killed: a follower, then the leader
// (a new leader is elected), each restarted after a while. Every grant
// must carry a greater token than the one before, and no grant may arrive
// while another holder's Context is live.
func TestMemberFailures(t *testing.T) {
	cluster := testenv.StartEtcdCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := &lease.Options{Logger: slog.New(slog.DiscardHandler)}
	log := &grantLog{t: t}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		cli, _ := countingClient(t, cluster.Endpoints)
		c, err := New(cli, quiet)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				actx, acancel := context.WithTimeout(ctx, 10*time.Second)
				l, err := c.AcquireWait(actx, "failover", 2*time.Second)
				acancel()
				if err != nil {
					continue // a member is down: try again
				}
				log.granted(l)
				time.Sleep(5 * time.Millisecond) // work
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				l.Release(rctx) // a lost lease's release fails: fine
				rcancel()
			}
		})
	}
	step := func(what string, fn func() error) {
		t.Helper()
		time.Sleep(time.Second)
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s (after %d grants)", what, log.count())
	}
	leader, err := cluster.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	step("kill a follower", cluster.Members[follower].Kill)
	step("restart it", func() error { return cluster.Members[follower].Start(ctx) })
	step("kill the leader", cluster.Members[leader].Kill)
	step("a new leader is elected", func() error {
		if err := cluster.WaitHealthy(ctx); err != nil {
			return err
		}
		next, err := cluster.Leader(ctx)
		if err == nil && next == leader {
			err = errors.New("the killed member is still the leader")
		}
		return err
	})
	step("restart the old leader", func() error { return cluster.Members[leader].Start(ctx) })
	// Grants resume once a waiter sees the last holder's key go: a lease
	// whose holder's Release failed during the election lasts its TTL
	// (etcd restarts lease timers on a new leader), plus a waiter's 10 s
	// AcquireWait that may have to time out and start again.
	before := log.count()
	for deadline := time.Now().Add(25 * time.Second); log.count() == before && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if log.count() == before {
		t.Fatal("no grant within 25 s after the members came back")
	}
	t.Logf("%d grants in all, tokens increasing, never two live holders", log.count())
}

func (g *grantLog) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
