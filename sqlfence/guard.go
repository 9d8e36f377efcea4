package sqlfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
)

// TxBeginner starts a transaction. It is satisfied by *pgx.Conn,
// *pgxpool.Pool, *pgxpool.Conn and pgx.Tx (whose Begin starts a savepoint,
// a nested transaction).
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Querier runs one statement. It is satisfied by *pgx.Conn, *pgxpool.Pool
// and pgx.Tx. On a connection or pool outside a transaction, each statement
// is its own transaction (autocommit).
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// txOptionsBeginner is the part of *pgx.Conn and *pgxpool.Pool that can set
// an isolation level; pgx.Tx lacks it (a savepoint inherits its
// transaction's level).
type txOptionsBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

var (
	_ TxBeginner        = (*pgx.Conn)(nil)
	_ TxBeginner        = (*pgxpool.Pool)(nil)
	_ TxBeginner        = (pgx.Tx)(nil)
	_ Querier           = (*pgx.Conn)(nil)
	_ Querier           = (*pgxpool.Pool)(nil)
	_ Querier           = (pgx.Tx)(nil)
	_ txOptionsBeginner = (*pgx.Conn)(nil)
	_ txOptionsBeginner = (*pgxpool.Pool)(nil)
)

// claimInsert takes resource $1's guard row for token $2 unless it holds a
// newer token, returning the token when it did.
const claimInsert = `
	INSERT INTO fencekit_tokens AS t (resource, token) VALUES ($1, $2)
	ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token,
		updated_at = CASE WHEN t.token < EXCLUDED.token THEN now() ELSE t.updated_at END
	WHERE t.token <= EXCLUDED.token
	RETURNING t.token
`

// claimSQL claims resource's guard row for token $2 in one statement. The
// CTE either returns the claimed row (claimed = true) or, when the row holds
// a newer token and the WHERE refused the update, the row as this
// statement's snapshot saw it (claimed = false), so a stale claim learns the
// current token in the same round trip. ON CONFLICT locks the conflicting row
// even when its WHERE is false, so the row cannot change until this
// transaction ends.
const claimSQL = `WITH claimed AS (` + claimInsert + `)
SELECT true, token FROM claimed
UNION ALL
SELECT false, token FROM fencekit_tokens WHERE resource = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`

// currentSQL reads resource's guard token with a fresh snapshot.
const currentSQL = `SELECT token FROM fencekit_tokens WHERE resource = $1`

// Claim claims resource's guard row for tok inside the caller's own
// transaction tx: afterwards no transaction presenting a smaller token can
// claim it, and a newer holder's claim waits on the row lock until tx ends.
// Do the fenced writes in tx after Claim returns nil, then commit.
//
// Claim costs one round trip (two in the rare race where a newer holder
// committed while this claim waited on the row lock: the refusal is
// re-read with a fresh snapshot so the error carries the real current token).
//
// Errors: a [*fence.StaleError] when a token greater than tok was already
// accepted (tx should then be rolled back; Claim has changed nothing);
// [fence.ErrInvalid] for a nil tx, a zero token or one above
// [fence.MaxToken], or a resource [fence.ValidateName] refuses (nothing
// sent); ctx's error; PostgreSQL's error (for example a missing
// fencekit_tokens table: run migrations.Up).
func Claim(ctx context.Context, tx pgx.Tx, resource string, tok fence.Token) error {
	if err := checkArgs(ctx, tx, resource, tok); err != nil {
		return err
	}
	return withCause(ctx, claim(ctx, tx, resource, tok))
}

// Fence claims resource's guard row for tok in a transaction of its own, a
// single autocommitted statement on a connection or pool: call it right
// after acquiring a lease, before writing anything, so that from then on
// every older holder's [InTx] or [Claim] on resource fails with a stale
// error, even while the new holder has not written anything yet. Row-mode
// writes see it only through a table bound with [Table.WithGuard]
// (resource); unbound tables compare with each row's own version. On a
// pgx.Tx it is the same as [Claim]: the claim becomes visible
// when that transaction commits.
//
// Fence costs one round trip (two in the rare refusal race described at
// [Claim]). Errors are those of [Claim].
func Fence(ctx context.Context, db Querier, resource string, tok fence.Token) error {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return err
	}
	return withCause(ctx, claim(ctx, db, resource, tok))
}

// Current returns the newest token committed for resource's guard row, or
// zero when the resource was never claimed. One round trip.
//
// Errors: [fence.ErrInvalid] for a nil db or a resource
// [fence.ValidateName] refuses (nothing sent); ctx's error (nothing sent
// when ctx is already done); PostgreSQL's errors (for example a missing
// fencekit_tokens table: run migrations.Up).
func Current(ctx context.Context, db Querier, resource string) (fence.Token, error) {
	if isNil(db) {
		return 0, errNilDB
	}
	if err := fence.ValidateName("resource", resource); err != nil {
		return 0, fmt.Errorf("sqlfence: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sqlfence: current token of %q: %w", resource, withCause(ctx, err))
	}
	var cur int64
	err := db.QueryRow(ctx, currentSQL, resource).Scan(&cur)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlfence: current token of %q: %w", resource, withCause(ctx, err))
	}
	return fence.Token(cur), nil
}

// claim runs claimSQL and turns a refusal into a *fence.StaleError.
func claim(ctx context.Context, q Querier, resource string, tok fence.Token) error {
	var claimed bool
	var cur int64
	err := q.QueryRow(ctx, claimSQL, resource, int64(tok)).Scan(&claimed, &cur)
	switch {
	case err == nil && claimed:
		return nil
	case err == nil && fence.IsStale(tok, fence.Token(cur)):
		return staleError(ctx, resource, tok, fence.Token(cur))
	case err == nil, errors.Is(err, pgx.ErrNoRows):
		// Refused, but the statement's snapshot predates the newer token
		// (it was committed while the claim waited on the row lock, or the
		// row was inserted then). The row is locked by this transaction
		// now, or committed for good in autocommit: re-read it.
		return staleFromReread(ctx, q, resource, tok)
	default:
		return fmt.Errorf("sqlfence: claim %q with token %s: %w", resource, tok, err)
	}
}

// staleFromReread re-reads resource's token in a new statement, which sees
// what was committed while the refused claim waited, and returns the stale
// error it explains.
func staleFromReread(ctx context.Context, q Querier, resource string, tok fence.Token) error {
	var cur int64
	if err := q.QueryRow(ctx, currentSQL, resource).Scan(&cur); err != nil {
		return fmt.Errorf("sqlfence: %q refused token %s; reading the current token: %w", resource, tok, err)
	}
	if !fence.IsStale(tok, fence.Token(cur)) {
		// Cannot happen while the row lock is held; say so rather than
		// pretend the write was stale.
		return fmt.Errorf("sqlfence: %q refused token %s but holds token %d; retry", resource, tok, cur)
	}
	return staleError(ctx, resource, tok, fence.Token(cur))
}

// staleError counts a refused write (fencekit_stale_rejected, store
// postgres) and returns its error.
func staleError(ctx context.Context, resource string, tok, cur fence.Token) error {
	obs.StaleRejected(ctx, obs.StorePostgres)
	return &fence.StaleError{Resource: resource, Presented: tok, Current: cur}
}

// withCause returns err, wrapping also context.Cause(ctx) when ctx has
// ended for a reason err does not carry yet: a query cut off by a lost
// lease's Context then matches lease.ErrLost (and fence.ErrFencedOut), not
// only context.Canceled.
func withCause(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, cause)
}

// errNilDB is the error for a nil database handle.
var errNilDB = fence.Invalid("sqlfence: nil database handle")

// checkArgs validates what every guard call checks before sending
// anything: the handle, the resource and the token (fence.ValidateWrite),
// then ctx. It allocates nothing on success.
func checkArgs(ctx context.Context, db any, resource string, tok fence.Token) error {
	if isNil(db) {
		return errNilDB
	}
	if err := fence.ValidateWrite("resource", resource, tok); err != nil {
		return fmt.Errorf("sqlfence: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlfence: resource %q: %w", resource, withCause(ctx, err))
	}
	return nil
}

// isNil reports whether db is nil or one of pgx's handles as a nil
// pointer, which would panic on first use. Another type holding a nil
// pointer is the caller's to avoid.
func isNil(db any) bool {
	switch db := db.(type) {
	case nil:
		return true
	case *pgxpool.Pool:
		return db == nil
	case *pgx.Conn:
		return db == nil
	case *pgxpool.Conn:
		return db == nil
	case *pgxpool.Tx:
		return db == nil
	}
	return false
}
