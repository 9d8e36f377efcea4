package pglease

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/lease"
)

// pollInterval bounds how long a waiter sleeps while notifications are not
// known to arrive (see [listener.serve]); probeTimeout is how long the
// listener waits for its probe before it says so.
const (
	pollInterval = 200 * time.Millisecond
	probeTimeout = 2 * time.Second
)

// reconnectDelay is the pause before the listener connects again after
// losing its connection (a restart, a terminated backend).
const reconnectDelay = 250 * time.Millisecond

// listener is the one LISTEN connection of a Client, shared by all its
// AcquireWait calls. It is opened (outside the pool, from the pool's
// connection settings, so that waiters never take connections that
// renewals need) by the first Watch and closed with the last one. It
// delivers each notification to the waiters of its row key. After losing
// its connection it reconnects and wakes every waiter, since a release
// may have been missed meanwhile; waiters also retry at the holder's TTL.
type listener struct {
	b *backend

	mu      sync.Mutex
	waiters map[string]map[*watch]struct{} // row key -> waiters
	refs    int
	stop    context.CancelFunc // ends the running loop; nil when none runs
	done    chan struct{}      // closed when the loop has exited
}

// watch is one AcquireWait's [lease.Watch].
type watch struct {
	l   *listener
	key string
	ch  chan struct{} // holds one wake-up
}

// Watch registers a waiter for name, opening the listener's connection
// (LISTEN, one round trip after connecting) when it is the first.
func (b *backend) Watch(ctx context.Context, name string) (lease.Watch, error) {
	w := &watch{l: &b.listener, key: b.key(name), ch: make(chan struct{}, 1)}
	if err := b.listener.add(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *watch) Wait(ctx context.Context) error {
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *watch) Close() error {
	w.l.remove(w)
	return nil
}

func (w *watch) wake() {
	select {
	case w.ch <- struct{}{}:
	default: // a wake-up is pending already
	}
}

func (l *listener) add(ctx context.Context, w *watch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == nil {
		conn, err := l.b.listen(ctx)
		if err != nil {
			return err
		}
		loopCtx, stop := context.WithCancel(context.Background())
		l.stop, l.done = stop, make(chan struct{})
		go l.run(loopCtx, conn, l.done)
	}
	if l.waiters == nil {
		l.waiters = map[string]map[*watch]struct{}{}
	}
	if l.waiters[w.key] == nil {
		l.waiters[w.key] = map[*watch]struct{}{}
	}
	l.waiters[w.key][w] = struct{}{}
	l.refs++
	return nil
}

// remove unregisters w; the last waiter closes the connection and waits
// for the loop to exit.
func (l *listener) remove(w *watch) {
	l.mu.Lock()
	ws := l.waiters[w.key]
	if _, ok := ws[w]; !ok {
		l.mu.Unlock()
		return // closed twice
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(l.waiters, w.key)
	}
	l.refs--
	var done chan struct{}
	if l.refs == 0 {
		l.stop()
		l.stop, done = nil, l.done
	}
	l.mu.Unlock()
	if done != nil {
		<-done
	}
}

// listen opens a connection with the pool's settings and sends LISTEN.
func (b *backend) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// run delivers notifications until ctx ends, reconnecting after errors.
func (l *listener) run(ctx context.Context, conn *pgx.Conn, done chan struct{}) {
	defer close(done)
	for {
		l.serve(ctx, conn)
		conn.Close(context.Background())
		for {
			if ctx.Err() != nil {
				return
			}
			l.wake("") // a release may have been missed: everyone tries again
			select {
			case <-ctx.Done():
				return
			case <-time.After(reconnectDelay):
			}
			var err error
			if conn, err = l.b.listen(ctx); err == nil {
				l.wake("") // and again: it may have come before LISTEN
				break
			}
		}
	}
}

// serve delivers conn's notifications until conn fails or ctx ends. It
// first proves that notifications arrive: it sends one (a probe payload,
// never a row key: keys do not start with '{') through the pool. Until the
// probe comes back the waiters are woken every pollInterval; if it has not
// come back after probeTimeout (LISTEN through a transaction-pooling
// PgBouncer hears nothing), a warning is logged, once per Client, and the
// polling goes on for as long as conn lives.
func (l *listener) serve(ctx context.Context, conn *pgx.Conn) {
	var wg sync.WaitGroup
	defer wg.Wait()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	heard := make(chan struct{})
	wg.Go(func() { l.poll(pctx, heard) })
	probe := fmt.Sprintf("{probe}%d", conn.PgConn().PID())
	if _, err := l.b.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, probe); err != nil {
		l.b.logger.Debug("pglease: could not send the LISTEN probe; waiters poll", "err", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		switch {
		case err != nil:
			return
		case n.Payload == probe:
			select {
			case <-heard:
			default:
				close(heard)
			}
		default:
			l.wake(n.Payload)
		}
	}
}

// poll wakes every waiter each pollInterval until heard is closed or ctx
// ends, and logs the fallback once after probeTimeout.
func (l *listener) poll(ctx context.Context, heard chan struct{}) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-heard:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			l.wake("")
			if time.Since(start) >= probeTimeout {
				l.b.noNotify.Do(func() {
					l.b.logger.Warn("pglease: LISTEN hears no notifications (a transaction-pooling PgBouncer?); AcquireWait polls instead",
						"channel", notifyChannel, "interval", pollInterval)
				})
			}
		}
	}
}

// wake wakes the waiters of key, or all of them when key is "".
func (l *listener) wake(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ws := range l.waiters {
		if key != "" && k != key {
			continue
		}
		for w := range ws {
			w.wake()
		}
	}
}
