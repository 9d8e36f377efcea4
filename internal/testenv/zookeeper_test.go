package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestZooKeeper checks that the shared server serves and that a test's
// tree is deleted at its cleanup.
func TestZooKeeper(t *testing.T) {
	var env *ZooKeeperEnv
	var conn *zk.Conn
	t.Run("sub", func(t *testing.T) {
		env = ZooKeeper(t)
		var err error
		conn, _, err = zk.Connect(env.Servers, 5*time.Second, zk.WithLogger(ZKLogger))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{env.Root, env.Root + "/a", env.Root + "/a/b"} {
			if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create %s: %v", p, err)
			}
		}
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	if ok, _, err := conn.Exists(env.Root); err != nil || ok {
		t.Fatalf("after cleanup: exists %v, %v; want the tree gone", ok, err)
	}
}

// TestZooKeeperEnsembleLeaderKilled kills the leader of a 3-server
// ensemble: the other two elect a new leader and serve; the old leader
// comes back as a follower with the data.
func TestZooKeeperEnsembleLeaderKilled(t *testing.T) {
	e := StartZooKeeperEnsemble(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := zk.Connect(e.Servers, 5*time.Second, zk.WithLogger(ZKLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Members[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		next, err := e.Leader(ctx)
		if err == nil && next != leader {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(errors.Join(err, ctx.Err()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("new leader after %v", time.Since(start))
	if err := e.Members[leader].Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	b, _, err := conn.Get("/kept")
	if err != nil || string(b) != "v" {
		t.Fatalf("Get after failover: %q, %v", b, err)
	}
}
