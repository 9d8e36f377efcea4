package zklease

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/internal/backoff"
)

// retryFor bounds how long zklease retries deleting a node nobody will
// release. A session whose connection stays down longer than its timeout
// ends anyway, and its nodes with it.
const retryFor = 2 * time.Minute

// errExpired explains a renewal refused without a request: the grant's
// node was already deleted (or is being deleted) by its expiry.
var errExpired = errors.New("zklease: the grant was not renewed for its TTL, and its node was deleted")

// expiry gives a grant the TTL a Redis key has: it deletes the holder node
// TTL after the last request sent for the grant (the grant, a renewal),
// unless it was released. So a lease that ended without a Release (lost
// locally while the session lived on, its process forgetting to release)
// does not hold the name for the life of the session. It is safe: the
// lease.Client's deadline is at most TTL minus the drift margin after the
// last request it sent, and once the expiry has decided to delete, every
// later renewal is refused without being sent.
type expiry struct {
	b    *backend
	path string
	ttl  time.Duration

	mu    sync.Mutex
	last  time.Time // when the last request for the grant was sent
	ended bool      // released, or being deleted by the expiry
	timer *time.Timer
}

// newExpiry starts the expiry of the grant of path, whose request was sent
// at sent.
func (b *backend) newExpiry(path string, ttl time.Duration, sent time.Time) *expiry {
	e := &expiry{b: b, path: path, ttl: ttl, last: sent}
	b.mu.Lock()
	if b.live == nil {
		b.live = map[*expiry]struct{}{}
	}
	b.live[e] = struct{}{}
	b.mu.Unlock()
	e.timer = time.AfterFunc(time.Until(sent.Add(ttl)), e.fire)
	return e
}

// touch records that a renewal is about to be sent. It reports false when
// the expiry has ended the grant: the renewal must not be sent.
func (e *expiry) touch() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return false
	}
	e.last = time.Now()
	e.timer.Reset(e.ttl)
	return true
}

// end stops the expiry: the grant is being released.
func (e *expiry) end() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.endLocked()
}

func (e *expiry) endLocked() {
	e.ended = true
	e.timer.Stop()
	e.b.mu.Lock()
	delete(e.b.live, e)
	e.b.mu.Unlock()
}

func (e *expiry) fire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return
	}
	if wait := e.ttl - time.Since(e.last); wait > 0 { // touched meanwhile
		e.timer.Reset(wait)
		return
	}
	e.deleteLocked()
}

// expireNow deletes the node at once, unless the grant has ended: the
// backend is closing, and its lease has already ended.
func (e *expiry) expireNow() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ended {
		e.deleteLocked()
	}
}

// deleteLocked ends the expiry and deletes the node in the background,
// before Close can stop the background's goroutines (Close waits for e.mu).
func (e *expiry) deleteLocked() {
	e.endLocked()
	e.b.bg.Go(func() { e.b.retry(func() error { return e.b.conn.Delete(e.path, -1) }) })
}

// sweep deletes the child of dir whose name carries nonce, if it exists:
// a holder node or ticket whose create reply was lost.
func (b *backend) sweep(dir, nonce string) {
	b.retry(func() error {
		kids, _, err := b.conn.Children(dir)
		for _, k := range kids {
			if err == nil && strings.Contains(k, nonce) {
				err = b.conn.Delete(dir+"/"+k, -1)
			}
		}
		return err
	})
}

// retry runs fn until it succeeds or finds the node gone, for up to
// retryFor or until Close stops it, pausing a little longer after each
// failure (at most 500ms: the node holds the name meanwhile).
func (b *backend) retry(fn func() error) {
	until := time.Now().Add(retryFor)
	for n := 1; time.Now().Before(until); n++ {
		if err := fn(); err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
		if backoff.Sleep(b.stop, backoff.Delay(50*time.Millisecond, n, 500*time.Millisecond)) != nil {
			return
		}
	}
}
