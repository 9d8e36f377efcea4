package etcdlease

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/lease"
)

// TestOperatorFunctionsRefuseBadInput: every exported function given a nil
// client, a bad prefix, name or pattern returns one clear ErrInvalid at
// once, without a panic. The client points at a closed port, so a call
// that sent anything would fail with ctx's error instead.
func TestOperatorFunctionsRefuseBadInput(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	type fn func(cli *clientv3.Client, prefix, name string) error
	fns := map[string]fn{
		"New": func(c *clientv3.Client, prefix, _ string) error {
			_, err := New(c, &lease.Options{KeyPrefix: prefix})
			return err
		},
		"Names": func(c *clientv3.Client, prefix, _ string) error {
			_, err := Names(ctx, c, prefix, "*")
			return err
		},
		"ForceRelease": func(c *clientv3.Client, prefix, name string) error {
			_, err := ForceRelease(ctx, c, prefix, name, fence.Token(5))
			return err
		},
	}
	cases := map[string]error{}
	for what, f := range fns {
		cases[what+" nil client"] = f(nil, "", "ok")
		for _, prefix := range []string{"a b", "x{", "a\x00", strings.Repeat("p", 65)} {
			cases[what+" prefix "+prefix] = f(cli, prefix, "ok")
		}
	}
	for _, name := range []string{"", "a b", "a\x00", strings.Repeat("n", 513)} {
		cases["ForceRelease name "+name] = fns["ForceRelease"](cli, "", name)
	}
	cases["Names pattern ["] = func() error { _, err := Names(ctx, cli, "", "["); return err }()
	for _, p := range leasetest.BadPatterns {
		cases["Names pattern "+p] = func() error { _, err := Names(ctx, cli, "", p); return err }()
	}
	leasetest.CheckInvalid(t, "etcdlease", cases)
}
