package etcdlease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/lease"
)

// TestRefusesBadInput: New given a nil client or a bad prefix, and Names
// given a pattern path.Match refuses, return one clear ErrInvalid at
// once. The client points at a closed port, so a call that sent anything
// would fail with ctx's error instead. (The other bad input of the
// operator calls: leasetest's BadInputSendsNothing.)
func TestRefusesBadInput(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cases := map[string]error{}
	newClient := func(c *clientv3.Client, prefix string) error {
		_, err := New(c, &lease.Options{KeyPrefix: prefix})
		return err
	}
	cases["New nil client"] = newClient(nil, "")
	for _, prefix := range []string{"a b", "x{", "a\x00", strings.Repeat("p", 65)} {
		cases["New prefix "+prefix] = newClient(cli, prefix)
	}
	leasetest.CheckInvalid(t, "etcdlease", cases)
	c, err := New(cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Names(ctx, "["); !errors.Is(err, lease.ErrInvalid) || strings.Count(err.Error(), "lease") != 1 || ctx.Err() != nil {
		t.Errorf(`Names("["): %v, want one ErrInvalid saying lease once, at once`, err)
	}
}
