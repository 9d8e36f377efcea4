// Package join runs goroutines that a Close waits for, with a bound.
package join

import (
	"context"
	"sync"
)

// Group counts the goroutines it started. Its zero value is ready to use.
// Unlike a sync.WaitGroup, Go may be called while Close waits: once Close
// has been called, Go refuses.
type Group struct {
	mu     sync.Mutex
	n      int           // goroutines running
	closed bool          // Close was called: Go refuses
	idle   chan struct{} // made by Close, closed when n reaches 0
}

// Go runs f in a new goroutine and reports true, or reports false and
// runs nothing once Close has been called.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	go func() {
		defer g.done()
		f()
	}()
	return true
}

func (g *Group) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
	}
}

// Close stops Go from starting goroutines and waits until every goroutine
// it started has returned, or until ctx ends. It returns how many were
// still running then (0 when all returned).
func (g *Group) Close(ctx context.Context) int {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		g.idle = make(chan struct{})
		if g.n == 0 {
			close(g.idle)
		}
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.n
	}
}
