package join

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestCloseWaitsThenRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group
		release := make(chan struct{})
		if !g.Go(func() { <-release }) {
			t.Fatal("Go refused before Close")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if n := g.Close(ctx); n != 1 || time.Since(start) != time.Second {
			t.Fatalf("Close with a goroutine running = %d after %v; want 1 after ctx's second", n, time.Since(start))
		}
		if g.Go(func() {}) {
			t.Fatal("Go ran a goroutine after Close")
		}
		close(release)
		if n := g.Close(context.Background()); n != 0 {
			t.Fatalf("second Close = %d once the goroutine returned; want 0", n)
		}
	})
}
