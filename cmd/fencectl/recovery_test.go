package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
	"github.com/fencekit/fencekit/lease/zklease"
)

// TestRecoveryAfterWipe runs the recovery docs/operations.md gives after an
// issuer lost its tokens (fencectl bump NAME --time) on each issuer bump
// serves, in the interleaving it must cover: G1 writes; other leases are
// granted; G2 is granted a larger token but pauses before writing; the
// issuer's data is wiped (Redis: FLUSHALL; PostgreSQL: TRUNCATE; ZooKeeper:
// the server restarted on an empty data directory, so zxids start again);
// the recovery runs; G3 is granted the name and writes; G2's late write
// must be refused.
func TestRecoveryAfterWipe(t *testing.T) {
	type issuer struct {
		env   []string // fencectl's environment
		flags []string // fencectl's flags for this issuer
		c     *lease.Client
		wipe  func() (*lease.Client, error) // returns the client to use after the wipe
	}
	ctx := context.Background()
	for _, backend := range []string{"redis", "postgres", "zookeeper"} {
		t.Run(backend, func(t *testing.T) {
			var is issuer
			switch backend {
			case "redis":
				srv := testenv.StartRedisServer(t)
				rdb := srv.Client(t)
				is = issuer{[]string{envRedisAddr + "=" + srv.Addr}, nil, newLeases(t, rdb, &lease.Options{Logger: quietLogger}),
					func() (*lease.Client, error) { return nil, rdb.FlushAll(ctx).Err() }}
			case "postgres":
				pg := testenv.PostgresMigrated(t)
				c, err := pglease.New(pg.Pool, &lease.Options{Logger: quietLogger})
				if err != nil {
					t.Fatal(err)
				}
				is = issuer{[]string{envPostgresURL + "=" + pg.URL}, []string{"-backend", "postgres"}, c,
					func() (*lease.Client, error) {
						_, err := pg.Pool.Exec(ctx, "TRUNCATE fencekit_leases")
						return nil, err
					}}
			case "zookeeper":
				e := testenv.StartZooKeeperEnsemble(t, 1)
				client := func() (*lease.Client, error) {
					conn, _, err := zk.Connect(e.Servers, 10*time.Second, zk.WithLogger(testenv.ZKLogger))
					if err != nil {
						return nil, err
					}
					t.Cleanup(conn.Close)
					return zklease.New(conn, &lease.Options{Logger: quietLogger})
				}
				c, err := client()
				if err != nil {
					t.Fatal(err)
				}
				is = issuer{[]string{envZooKeeper + "=" + e.Servers[0]}, []string{"-backend", "zookeeper"}, c,
					func() (*lease.Client, error) {
						m := e.Members[0]
						if err := m.Kill(); err != nil {
							return nil, err
						}
						if err := os.RemoveAll(filepath.Join(m.Dir, "data", "version-2")); err != nil {
							return nil, err
						}
						if err := m.Start(ctx); err != nil {
							return nil, err
						}
						return client() // the old session is gone with the data
					}}
			}
			t.Cleanup(func() {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				is.c.Close(cctx)
			})
			const name = "orders"
			store := fencetest.NewStore()

			g1 := acquire(t, is.c, name, 10*time.Second)
			if err := store.Put(name, g1.Token(), []byte("g1")); err != nil {
				t.Fatal(err)
			}
			if err := g1.Release(ctx); err != nil {
				t.Fatal(err)
			}
			for range 20 { // other leases at work
				if err := acquire(t, is.c, "other", 10*time.Second).Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			g2 := acquire(t, is.c, name, 10*time.Second) // paused before its write

			after, err := is.wipe()
			if err != nil {
				t.Fatal(err)
			}
			if after == nil {
				after = is.c
			}
			runWant(t, is.env, 0, append(append([]string{"bump"}, is.flags...), name, "--time")...)

			g3 := acquire(t, after, name, 10*time.Second)
			if err := store.Put(name, g3.Token(), []byte("g3")); err != nil {
				t.Fatalf("G3's write (token %v; G2 holds %v): %v", g3.Token(), g2.Token(), err)
			}
			if err := store.Put(name, g2.Token(), []byte("g2")); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("G2's late write (token %v) after G3's (token %v): %v, want refused as stale", g2.Token(), g3.Token(), err)
			}
		})
	}
}
