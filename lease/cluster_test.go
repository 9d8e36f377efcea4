package lease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
)

func TestCluster(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	cc := rc.Client(t)
	c := mustNew(t, cc, &Options{RenewInterval: 50 * time.Millisecond})
	ctx := context.Background()

	// Names whose keys live on each of the three masters.
	byNode := map[string]string{}
	for i := 0; len(byNode) < 3 && i < 1000; i++ {
		name := fmt.Sprintf("job-%d", i)
		k := c.keys(name)
		lockSlot, _ := cc.ClusterKeySlot(ctx, k.lock).Result()
		tokenSlot, _ := cc.ClusterKeySlot(ctx, k.token).Result()
		if lockSlot != tokenSlot {
			t.Fatalf("%s: lock slot %d, token slot %d: the hash tag does not hold", name, lockSlot, tokenSlot)
		}
		node, err := cc.MasterForKey(ctx, k.lock)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byNode[node.Options().Addr]; !ok {
			byNode[node.Options().Addr] = name
		}
	}
	if len(byNode) != 3 {
		t.Fatalf("names found on %d masters, want 3", len(byNode))
	}
	for addr, name := range byNode {
		l := mustAcquire(t, c, name, 200*time.Millisecond)
		if _, err := c.Acquire(ctx, name, time.Second); !isNotAcquired(err) {
			t.Fatalf("%s on %s: second Acquire = %v", name, addr, err)
		}
		time.Sleep(400 * time.Millisecond) // two TTLs: alive only if renewed
		if l.Err() != nil {
			t.Fatalf("%s on %s: lost while renewing: %v", name, addr, l.Err())
		}
		// A waiter is woken by the release published from the key's node.
		got := make(chan *Lease, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			w, err := c.AcquireWait(wctx, name, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		time.Sleep(100 * time.Millisecond)
		release(t, l)
		w := <-got
		if w == nil {
			t.FailNow()
		}
		if w.Token() <= l.Token() {
			t.Fatalf("%s on %s: token %v not above %v", name, addr, w.Token(), l.Token())
		}
		release(t, w)
		t.Logf("%s on %s: tokens %v, %v", name, addr, l.Token(), w.Token())
	}
}
