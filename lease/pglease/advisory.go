package pglease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// NewAdvisory returns a lease client whose leases are PostgreSQL session
// advisory locks (pg_try_advisory_lock), one per held lease, each on a
// connection of its own: a granted Acquire keeps the pool connection it ran
// on until Release, so size the pool (MaxConns) for the leases held at
// once plus the other work. The lease is lost when that
// connection dies (the server releases the lock at once); the heartbeat
// finds out by a cheap query on it every RenewInterval (the ttl passed to
// Acquire sets it, TTL/3 by default, and the lease's Context ends, as with
// the other issuers, when no query was confirmed for ttl). The server keeps
// no TTL: a holder that stops answering (SIGSTOP, a long pause) keeps its
// session, and the lease, until the session ends (pg_terminate_backend,
// TCP keepalive, idle_session_timeout); its token still fences its late
// writes. Tokens come from the row of fencekit_leases_advisory
// (migrations/000004), max(last + 1, server time in µs), as New's.
//
// Call Release (Do and Campaign do) also for a lease whose Context ended by
// its deadline: until then, or until the client's Close, it keeps its
// connection, and its session the lock. Close ends the sessions of such
// leases, so the pool's Close after it does not wait for them.
//
// Each pool connection must be a server session of its own: PgBouncer in
// transaction or statement pooling mode hands the session, and the locks
// it holds, to other clients after each transaction, so that two clients
// would hold one lease. NewAdvisory checks this with one statement on a
// pool connection (bounded by 10 s) and refuses a pool whose connections
// go through a pooler: the server process that answers is not the one the
// connection was given at start-up. Session-pooling PgBouncer is refused
// too: a client cannot tell it from transaction pooling.
//
// Errors: an error wrapping [lease.ErrInvalid] for a nil pool or an invalid
// option (nothing sent); an error naming the pooler for a pool through one;
// the error of the check (for example, no server).
func NewAdvisory(pool *pgxpool.Pool, opts *lease.Options) (*lease.Client, error) {
	if pool == nil {
		return nil, valid.Invalid("pglease: NewAdvisory: nil *pgxpool.Pool")
	}
	c, err := lease.NewClient(&advisory{backend: tableBackend(pool, opts)}, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ownSessions(ctx, pool); err != nil {
		c.Close(ctx)
		return nil, err
	}
	return c, nil
}

// ownSessions returns an error when a connection of pool does not talk to
// the server process it was given at start-up (its BackendKeyData), which
// is what a pooler in between (PgBouncer, in any mode) makes it do.
func ownSessions(ctx context.Context, pool *pgxpool.Pool) error {
	var pid, given int64
	err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		given = int64(c.Conn().PgConn().PID())
		return c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	})
	if err != nil {
		return fmt.Errorf("pglease: NewAdvisory: checking that each pool connection is a server session of its own: %w", err)
	}
	if pid != given {
		return fmt.Errorf("pglease: NewAdvisory: the pool goes through a connection pooler such as PgBouncer "+
			"(server process %d answered a connection that was given process %d): a pooler hands a session, "+
			"and its advisory locks, to other clients, so two of them could hold one lease; "+
			"give NewAdvisory a pool connected to PostgreSQL directly, or use pglease.New", pid, given)
	}
	return nil
}

// advisory keeps each lease as a session advisory lock on a pool
// connection it holds. Watch (LISTEN/NOTIFY, with its polling fallback)
// and the row keys are the table backend's.
type advisory struct {
	*backend
	holds holds
}

// holds are the connections of the granted leases, so that Close can end
// those of leases lost and never released.
type holds struct {
	mu     sync.Mutex
	m      map[*hold]struct{}
	closed bool
}

// add records h; it reports false, recording nothing, after Close.
func (s *holds) add(h *hold) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.m == nil {
		s.m = map[*hold]struct{}{}
	}
	s.m[h] = struct{}{}
	h.set = s
	return true
}

// close refuses later adds and returns the holds recorded.
func (s *holds) close() []*hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	left := make([]*hold, 0, len(s.m))
	for h := range s.m {
		left = append(left, h)
	}
	return left
}

// hold is a granted lease's connection, and the lock's key on it. mu
// serializes the heartbeat's pings with Release and Close.
type hold struct {
	mu   sync.Mutex
	conn *pgxpool.Conn // nil once given back
	key  int64
	set  *holds // where it is recorded (nil before)
}

// drop closes h's connection (ending its session frees the lock) and gives
// it back to the pool, which discards it. h.mu is held.
func (h *hold) drop(ctx context.Context) {
	h.conn.Conn().Close(context.WithoutCancel(ctx))
	h.giveBack()
}

// giveBack gives h's connection back to the pool. h.mu is held.
func (h *hold) giveBack() {
	h.conn.Release()
	h.conn = nil
	if h.set != nil {
		h.set.mu.Lock()
		delete(h.set.m, h)
		h.set.mu.Unlock()
	}
}

// errAdvisoryClosed is an Acquire that was granted while the client
// closed: its session was ended, and the lock with it.
var errAdvisoryClosed = errors.New("pglease: acquire: the client closed meanwhile; the lock was given back")

// Close ends the sessions of the leases still holding a connection: those
// lost and never released (the Client has released the others). Ending
// the session frees the lock, and the pool discards the connection, so
// the pool's Close does not wait for them.
func (a *advisory) Close(ctx context.Context) error {
	for _, h := range a.holds.close() {
		h.mu.Lock()
		if h.conn != nil {
			h.drop(ctx)
		}
		h.mu.Unlock()
	}
	return nil
}

// lockKey is the advisory lock's key for the row key $1: a 64-bit hash of
// the key and the schema of the fencekit_leases_advisory table that the
// session's search_path finds. Advisory locks are per database and the
// token rows per table, so every client that takes its tokens from one
// table takes one lock, whatever its search_path.
const lockKey = `hashtextextended((SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = 'fencekit_leases_advisory'::regclass) || '.' || $1, 0)`

// advisoryAcquireSQL tries the lock and, when it got it, takes the next
// token, in one statement; refused, it reads the holder's token and
// identity from the row. It locks the row (when there is one) before
// trying the lock, so a session that holds the lock but has not written its
// token yet holds the row too: ForceRelease, which reads the row's token
// under a row lock before ending the lock's session, waits for it instead
// of ending it as the row's older holder.
const advisoryAcquireSQL = `
WITH row AS (
    SELECT FROM fencekit_leases_advisory WHERE name = $1 FOR NO KEY UPDATE
), l AS (
    SELECT ` + lockKey + ` AS key, pg_try_advisory_lock(` + lockKey + `) AS got
    FROM (SELECT count(*) FROM row) AS locked
), granted AS (
    INSERT INTO fencekit_leases_advisory AS a (name, token, identity)
    SELECT $1, ` + nowUS + `, $2 FROM l WHERE got
    ON CONFLICT (name) DO UPDATE SET token = greatest(a.token + 1, ` + nowUS + `), identity = EXCLUDED.identity
    RETURNING token
)
SELECT l.key, l.got,
       coalesce((SELECT token FROM granted), (SELECT token FROM fencekit_leases_advisory WHERE name = $1), 0),
       coalesce((SELECT identity FROM fencekit_leases_advisory WHERE name = $1 AND NOT l.got), '')
FROM l`

// Name is "postgres-advisory".
func (a *advisory) Name() string { return "postgres-advisory" }

// Acquire tries the lock on a pool connection, one round trip. Granted,
// the lease keeps the connection; refused, it goes back to the pool.
// The refusal reports Remaining -1: the lock has no expiry.
func (a *advisory) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*lease.Grant, error) {
	c, err := a.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	var key, tok int64
	var got bool
	var holder string
	err = c.QueryRow(ctx, advisoryAcquireSQL, a.key(name), identity).Scan(&key, &got, &tok, &holder)
	switch {
	case err != nil:
		// The lock may have been taken before the error: end the session.
		(&hold{conn: c}).drop(ctx)
		return nil, err
	case !got:
		c.Release()
		return nil, &lease.NotAcquiredError{Name: name, Holder: fence.Token(tok), Identity: holder, Remaining: -1}
	}
	h := &hold{conn: c, key: key}
	if !a.holds.add(h) {
		h.drop(ctx)
		return nil, errAdvisoryClosed
	}
	return &lease.Grant{Name: name, Token: fence.Token(tok), TTL: ttl, Value: h}, nil
}

// Renew checks each grant's connection with an empty statement, one round
// trip per grant. A closed connection is a lost lease (the server released
// the lock, or will when it sees the connection end).
func (a *advisory) Renew(ctx context.Context, batch []*lease.Grant) []error {
	var errs []error
	for i, g := range batch {
		if err := g.Value.(*hold).ping(ctx); err != nil {
			if errs == nil {
				errs = make([]error, len(batch))
			}
			errs[i] = err
		}
	}
	return errs
}

// ping runs the check with ctx's deadline but not its cancellation
// ([detach]): a cancelled statement would close the connection, and end
// the session (and the lock) under the Release that follows.
func (h *hold) ping(ctx context.Context) error {
	pctx, cancel := detach(ctx)
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return &lease.LostError{Cause: lease.CauseMissing}
	}
	_, err := h.conn.Exec(pctx, ";") // an empty statement: a round trip, no work
	if err != nil && h.conn.Conn().IsClosed() {
		h.drop(ctx)
		return &lease.LostError{Cause: lease.CauseMissing, Err: err}
	}
	return err
}

// advisoryReleaseSQL unlocks and announces the release on notifyChannel (at the
// statement's commit, after the unlock).
const advisoryReleaseSQL = `WITH n AS (SELECT pg_notify('` + notifyChannel + `', $2)) SELECT pg_advisory_unlock($1) FROM n`

// Release unlocks and notifies the waiters, one round trip, and gives the
// connection back to the pool. When that fails, it closes the connection
// instead, which ends the session and the lock. A connection found closed
// is CauseMissing.
func (a *advisory) Release(ctx context.Context, g *lease.Grant) error {
	h := g.Value.(*hold)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return &lease.LostError{Cause: lease.CauseMissing}
	}
	var unlocked bool
	err := h.conn.QueryRow(ctx, advisoryReleaseSQL, h.key, a.key(g.Name)).Scan(&unlocked)
	closed := h.conn.Conn().IsClosed()
	if err != nil || !unlocked {
		h.drop(ctx)
	} else {
		h.giveBack()
	}
	switch {
	case closed || err == nil && !unlocked:
		return &lease.LostError{Cause: lease.CauseMissing, Err: err}
	case err != nil:
		return err // the session ended with the closed connection, and the lock with it
	}
	return nil
}

// advisoryInspectSQL reads the row and whether some session holds the lock.
const advisoryInspectSQL = `
SELECT coalesce((SELECT token FROM fencekit_leases_advisory WHERE name = $1), 0),
       coalesce((SELECT identity FROM fencekit_leases_advisory WHERE name = $1), ''),
       EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND ((classid::bigint << 32) | objid::bigint) = ` + lockKey + `)`

// Inspect reads the row and pg_locks, one round trip. Remaining is -1
// while held: the lock has no expiry.
func (a *advisory) Inspect(ctx context.Context, name string) (lease.Info, error) {
	var tok int64
	var identity string
	var held bool
	err := a.pool.QueryRow(ctx, advisoryInspectSQL, a.key(name)).Scan(&tok, &identity, &held)
	if err != nil {
		return lease.Info{}, err
	}
	info := lease.Info{Last: fence.Token(tok)}
	if held {
		info.Held, info.Holder, info.Identity, info.Remaining = true, fence.Token(tok), identity, -1
	}
	return info, nil
}
