// Package sqlfence makes PostgreSQL refuse writes from a lease holder whose
// fencing token is older than one it has already accepted, in the same
// statement or transaction as the write, so a paused or partitioned former
// holder cannot overwrite its successor's work. It uses pgx v5 and accepts
// a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx. For database/sql, use
// package github.com/fencekit/fencekit/sqlfence/stdsql.
//
// # Set-up
//
// Through PgBouncer in transaction pooling mode, give the pool
// default_query_exec_mode=exec in its URL (docs/postgres.md, "PgBouncer").
//
// Guard-row mode needs the fencekit_tokens table: apply it at start-up with
// migrations.Up (package github.com/fencekit/fencekit/migrations), which
// records its version in fencekit_schema_migrations and leaves the
// program's own golang-migrate table alone, or apply the SQL files of that
// package with another tool. Importing sqlfence links neither golang-migrate
// nor a database/sql driver.
//
// # Guard-row mode
//
// [InTx] runs the caller's function in one transaction that first claims
// the resource's row in fencekit_tokens with one statement, in effect:
//
//	INSERT INTO fencekit_tokens (resource, token) VALUES ($1, $2)
//	ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
//	WHERE fencekit_tokens.token <= EXCLUDED.token
//
// When the row already holds the token (a holder writing again), the claim
// only locks it (FOR NO KEY UPDATE) and writes no new row version.
// A newer token was accepted before: the claim refuses, InTx returns a
// [*fence.StaleError] carrying that token and the function never runs.
// Otherwise the row stays locked until commit, so the fenced transactions
// of one resource run one after the other: a newer holder's claim waits
// for an older holder's open transaction to commit or fail, and an older
// holder's claim waits and then fails. The data written may be anything,
// in any tables. Cost: the round trips of the same transaction unfenced
// (on a pool or connection the claim travels in the BEGIN's message), and
// the claim's server CPU (docs/performance.md, "Fenced SQL writes").
// [Exec] sends the claim and one statement as one pipeline, an implicit
// transaction: one round trip for a single-statement write.
// [Claim] makes the claim alone: on a pool or connection right after a
// lease is acquired, which shuts out the previous holder before the new one
// has written anything, or on a transaction the caller manages.
//
// # Row mode
//
// [NewTable] fences rows of the caller's own table that carry a version
// column (lock_version): [Table.Update] writes a row only if its version is
// not greater than the token and stores the token as the new version. The
// accepted write is one plain statement and one round trip,
//
//	UPDATE t SET lock_version = $tok, ... WHERE key = $k AND lock_version <= $tok
//
// and only a write that changed no row sends a second statement, to tell a
// stale write (with the row's version) from a missing row ([ErrNoRow]).
// [Table.Insert] inserts a row that does not exist yet, and [Table.Upsert]
// does either. For a read-modify-write, read with [Table.Claim]: it raises
// the row's version to the token in the same statement, so an older
// holder's write between the read and the write is refused instead of
// being accepted and then overwritten. Use it when each write touches one row; use guard-row mode
// when a write spans rows or tables, or the schema cannot get a version
// column.
//
// A Table is its own fence: it knows nothing of guard rows. When the same
// rows are also written inside InTx(resource), bind the table with
// [Table.WithGuard](resource): its writes then also claim the guard row, in
// the same statement, and the two modes fence each other in both
// directions. Never mix an unbound Table and InTx on the same rows.
//
// # Isolation
//
// READ COMMITTED, PostgreSQL's default, is enough for both modes: the check
// and the write happen under the same row lock (the guard row's, or the
// updated row's), and PostgreSQL re-checks an UPDATE's or ON CONFLICT's
// condition against the newest committed version of a row it had to wait
// for. Stricter levels work too; with [Options] IsoLevel RepeatableRead or
// Serializable, [Guard.InTx] re-runs the transaction after SQLSTATE 40001
// or 40P01, a bounded number of times.
//
// # Paused holders
//
// Fencing refuses a paused holder's writes but cannot take back the locks
// its open transaction holds: until that transaction ends, the next
// holder's claim waits. Give fenced connections an
// idle_in_transaction_session_timeout shorter than the lease TTL, so that
// the server ends a paused holder's session and rolls it back.
//
// # Errors
//
// Stale writes return *fence.StaleError (errors.Is(err, fence.ErrStale),
// and fence.ErrFencedOut); inside the caller's transaction they also make
// it fail, and its Commit returns pgx.ErrTxCommitRollback, not a stale
// error: roll it back. Each is counted in the OpenTelemetry counter
// fencekit_stale_rejected (Prometheus fencekit_stale_rejected_total,
// store="postgres") on a [Guard]'s Options.MeterProvider (its InTx, Exec and
// Claim); the package-level
// functions and [Table] count on the global provider (otel.GetMeterProvider),
// registered on their first call. Once ctx has ended, errors also wrap
// context.Cause(ctx): a write cut off by a lost lease's Context matches
// lease.ErrLost and fence.ErrFencedOut, the one check for "no longer the
// holder: stop, do not retry".
// Bad input is refused before anything is sent, with an error matching
// [fence.ErrInvalid]: a zero token or one above 2^63-1 (PostgreSQL's bigint
// cannot hold it), a bad resource name, a nil handle,
// table or fn, a table or column name that is not a plain identifier, a
// column named twice, a wrong number of values. An already cancelled
// context is refused too, with ctx's error.
//
// The guide with a worked lease example is docs/postgres.md.
package sqlfence
