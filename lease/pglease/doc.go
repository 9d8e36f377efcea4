// Package pglease issues fencekit leases from PostgreSQL: the same
// *lease.Client as Redis's (Do, Campaign, Inspect, metrics, loss signalling),
// made with [New].
//
//	c, err := pglease.New(pool, nil) // after migrations.Up
//	l, err := c.Acquire(ctx, "invoices", 10*time.Second)
//
// Each lease is a row of fencekit_leases (name, token, expires_at). Acquire
// takes the row when it is absent or expired and increments its token in
// the same statement; the row is kept after release, so tokens for a name
// increase strictly and durably (they are in the WAL). Expiry is computed
// from the server's clock only (statement_timestamp()): no client clock is
// trusted. Acquire, Release, Inspect and a whole batch of renewals are one
// statement (one round trip) each, through any pool.
//
// AcquireWait waits on LISTEN/NOTIFY: Release notifies the channel
// fencekit_lease_released at commit, and one LISTEN connection per Client, opened outside
// the pool by the first waiter and closed with the last, wakes the waiters.
// The listener first checks that notifications arrive (it sends itself one
// through the pool): until that one comes back, waiters retry every 200 ms,
// and if it has not come back after 2 s (LISTEN through a
// transaction-pooling PgBouncer hears nothing) a warning is logged, once
// per Client, and the waiters keep polling.
//
// [NewAdvisory] issues the same leases as session advisory locks
// (pg_try_advisory_lock): no TTL on the server, lost
// when the holder's connection dies. Prefer the table: an advisory lease
// pins a pool connection for its whole life (NewAdvisory refuses a pool
// through PgBouncer, whose transaction mode cannot hold one), a dropped connection frees the lock at once,
// before the holder's Context can end, a half-open one or a paused holder
// keeps it until its session ends, and a failover frees every lock. A row
// has none of that: any connection renews it, a terminated backend only
// costs a retry, and the grant outlives a restart. docs/leases.md compares
// the two.
//
// Tokens (both modes) are max(last token + 1, server time in µs), from a
// row per name that is kept after release, so they keep increasing when
// that row is lost (deleted, truncated, restored from an older dump) and
// compare with redislease's tokens.
//
// Tokens survive a failover only if the standby had the grant: with
// asynchronous replication a failover may lose the last grants and issue
// their tokens again. Fenced storage in the same database loses the writes
// made with those tokens too (they came later in the WAL), so it stays
// consistent; for other storage (S3), use synchronous replication.
package pglease
