package zklease

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestOperatorFunctionsRefuseBadInput: every exported function given a nil
// conn, a bad prefix, name or token returns one clear ErrInvalid at once,
// without a panic. The conn points at a closed port, so a call that sent
// anything would fail with ZooKeeper's error or ctx's instead.
func TestOperatorFunctionsRefuseBadInput(t *testing.T) {
	conn, _, err := zk.Connect([]string{"127.0.0.1:1"}, time.Second, zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	type fn func(conn *zk.Conn, prefix, name string, to fence.Token) error
	fns := map[string]fn{
		"New": func(c *zk.Conn, prefix, _ string, _ fence.Token) error {
			_, err := New(c, &lease.Options{KeyPrefix: prefix})
			return err
		},
		"Names": func(c *zk.Conn, prefix, _ string, _ fence.Token) error {
			_, err := Names(ctx, c, prefix, "*")
			return err
		},
		"ForceRelease": func(c *zk.Conn, prefix, name string, to fence.Token) error {
			_, err := ForceRelease(ctx, c, prefix, name, to)
			return err
		},
		"Bump": func(c *zk.Conn, prefix, name string, to fence.Token) error {
			_, _, err := Bump(ctx, c, prefix, name, to)
			return err
		},
	}
	cases := map[string]error{}
	for what, f := range fns {
		cases[what+" nil conn"] = f(nil, "", "ok", 5)
		for _, prefix := range []string{"a b", "x{", "a\x00", "/abs", "a//b", "zookeeper", strings.Repeat("p", 65)} {
			cases[what+" prefix "+prefix] = f(conn, prefix, "ok", 5)
		}
		if what == "New" || what == "Names" {
			continue
		}
		for _, name := range []string{"", "a b", "a\x00", strings.Repeat("n", 513)} {
			cases[what+" name "+name] = f(conn, "", name, 5)
		}
	}
	cases["Bump to 0"] = fns["Bump"](conn, "", "ok", 0)
	for _, p := range leasetest.BadPatterns {
		cases["Names pattern "+p] = func() error { _, err := Names(ctx, conn, "", p); return err }()
	}
	leasetest.CheckInvalid(t, "zklease", cases)
}
