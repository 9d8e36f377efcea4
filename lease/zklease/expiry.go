package zklease

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
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
	e.ended = true
	e.timer.Stop()
}

func (e *expiry) fire() {
	e.mu.Lock()
	if e.ended {
		e.mu.Unlock()
		return
	}
	if wait := e.ttl - time.Since(e.last); wait > 0 { // touched meanwhile
		e.timer.Reset(wait)
		e.mu.Unlock()
		return
	}
	e.ended = true
	e.mu.Unlock()
	e.b.retry(func() error { return e.b.conn.Delete(e.path, -1) })
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
// retryFor, pausing a little longer after each failure (at most 500ms: the
// node holds the name meanwhile).
func (b *backend) retry(fn func() error) {
	for wait, until := 50*time.Millisecond, time.Now().Add(retryFor); time.Now().Before(until); wait = min(2*wait, 500*time.Millisecond) {
		if err := fn(); err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
		time.Sleep(wait)
	}
}
