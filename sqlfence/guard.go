package sqlfence

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/pgsql"
	"github.com/fencekit/fencekit/internal/valid"
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
// [fence.ErrInvalid] for a nil tx, a bad token or resource (nothing
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
// Errors: [fence.ErrInvalid] for a nil db or a bad resource ([fence.ErrInvalid]) (nothing sent); ctx's error (nothing sent
// when ctx is already done); PostgreSQL's errors (for example a missing
// fencekit_tokens table: run migrations.Up).
func Current(ctx context.Context, db Querier, resource string) (fence.Token, error) {
	if isNil(db) {
		return 0, errNilDB
	}
	return pgsql.Current(ctx, pgxSender{db}, "sqlfence", resource)
}

// claim claims resource's guard row for tok through q (pgsql.Claim).
func claim(ctx context.Context, q Querier, resource string, tok fence.Token) error {
	return pgsql.Claim(ctx, pgxSender{q}, "sqlfence", resource, tok)
}

// withCause returns err, wrapping also context.Cause(ctx) (pgsql.WithCause).
func withCause(ctx context.Context, err error) error { return pgsql.WithCause(ctx, err) }

// pgxSender sends statements through a pgx Querier, for pgsql.
type pgxSender struct{ q Querier }

func (s pgxSender) Row(ctx context.Context, sql string, args []any, dest ...any) (bool, error) {
	err := s.q.QueryRow(ctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (s pgxSender) Exec(ctx context.Context, sql string, args []any) (int64, error) {
	tag, err := s.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// errNilDB is the error for a nil database handle.
var errNilDB = valid.Invalid("sqlfence: nil database handle")

// checkArgs validates what every guard call checks before sending
// anything: the handle, the resource and the token (valid.Write),
// then ctx. It allocates nothing on success.
func checkArgs(ctx context.Context, db any, resource string, tok fence.Token) error {
	return pgsql.CheckArgs(ctx, "sqlfence", isNil(db), errNilDB, resource, tok)
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
