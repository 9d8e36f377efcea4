package zklease

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestNewRefusesBadInput: New given a nil conn or a bad prefix returns one
// clear ErrInvalid at once, without a panic. The conn points at a closed
// port, so a call that sent anything would fail with ZooKeeper's error.
// (The operator calls' bad input: leasetest's BadInputSendsNothing.)
func TestNewRefusesBadInput(t *testing.T) {
	conn, _, err := zk.Connect([]string{"127.0.0.1:1"}, time.Second, zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	type fn func(conn *zk.Conn, prefix, name string, to fence.Token) error
	fns := map[string]fn{
		"New": func(c *zk.Conn, prefix, _ string, _ fence.Token) error {
			_, err := New(c, &lease.Options{KeyPrefix: prefix})
			return err
		},
	}
	cases := map[string]error{}
	for what, f := range fns {
		cases[what+" nil conn"] = f(nil, "", "ok", 5)
		for _, prefix := range []string{"a b", "x{", "a\x00", "/abs", "a//b", "zookeeper", strings.Repeat("p", 65)} {
			cases[what+" prefix "+prefix] = f(conn, prefix, "ok", 5)
		}
	}
	leasetest.CheckInvalid(t, "zklease", cases)
}
