package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// startGroup starts a private group of servers (an etcd cluster, a
// ZooKeeper ensemble) for tb: launch starts them with their data under a
// new directory named after what; at cleanup kill stops them and the
// directory is removed. A group that does not start skips tb, or fails it
// when servers are [Required].
func startGroup(tb testing.TB, what string, launch func(dir string) error, kill func()) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "fencekit-"+what+"-")
	if err != nil {
		tb.Fatalf("testenv: %s data dir: %v", what, err)
	}
	err = launch(dir)
	tb.Cleanup(func() {
		kill()
		os.RemoveAll(dir)
	})
	if err != nil {
		if Required() {
			tb.Fatal(err)
		}
		tb.Skip(err.Error() + " (skipping; set " + EnvRequireServers + "=1 to fail instead)")
	}
}

// waitEach waits until ready returns nil for every running member, trying
// every 25ms, or until ctx ends; the error says which member was not
// state ("healthy", "serving").
func waitEach(ctx context.Context, members []*Server, what, state string, ready func(context.Context, *Server) error) error {
	for _, m := range members {
		if !m.Running() {
			continue
		}
		for {
			err := ready(ctx, m)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("testenv: %s %s not %s: %w", what, m.Name, state, errors.Join(err, ctx.Err()))
			case <-time.After(25 * time.Millisecond):
			}
		}
	}
	return nil
}
