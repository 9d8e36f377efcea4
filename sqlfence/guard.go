package sqlfence

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/obs"
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

// Claim records tok as resource's newest token in its guard row
// (fencekit_tokens) without writing data, so that every older token is
// refused from then on. On a *pgx.Conn or *pgxpool.Pool it commits at
// once: call it right after acquiring a lease, before writing anything, so
// that every older holder's [InTx], [Exec] or Claim on resource fails with
// a stale error even while the new holder has written nothing. On a pgx.Tx
// (or a connection inside a transaction) it lives until that transaction ends and holds the guard row's lock
// until then (a newer holder's claim waits): claim first, then write, then
// commit. A ROLLBACK TO SAVEPOINT made before the claim undoes it and frees
// the row, so that later writes are not fenced: claim again after one. Row-mode writes see it only through a table bound with
// [Table.WithGuard](resource); unbound tables compare with each row's own
// version.
//
// Claim costs one round trip (two in the rare race where a newer holder
// committed while this claim waited on the row lock: the refusal is
// re-read with a fresh snapshot so the error carries the real current token),
// and one more after a refusal inside a transaction, or on a Querier of
// your own, which may wrap a pgx.Tx (the statement that makes it fail).
//
// Errors: a [*fence.StaleError] when a token greater than tok was already
// accepted (nothing changed; in a transaction, Claim also makes it fail,
// so that its COMMIT rolls back: pgx's Commit returns
// pgx.ErrTxCommitRollback, a raw COMMIT answers ROLLBACK; roll it back:
// a later ROLLBACK TO SAVEPOINT, such as a deferred Rollback of a pgx
// savepoint, clears the failure); [fence.ErrInvalid] for a
// nil db or a bad token or resource (nothing sent); ctx's error, wrapping
// context.Cause(ctx) once ctx has ended; PostgreSQL's error (for example a
// missing fencekit_tokens table: run migrations.Up).
func Claim(ctx context.Context, db Querier, resource string, tok fence.Token) error {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return err
	}
	return cause.With(ctx, abortIfStale(ctx, db, claim(ctx, db, resource, tok)))
}

// abortIfStale makes db's transaction fail (pgsql.AbortTx) when err is a
// refusal and db may be inside a transaction, and returns err.
func abortIfStale(ctx context.Context, db Querier, err error) error {
	if errors.Is(err, fence.ErrStale) && mayBeInTransaction(db) {
		pgsql.AbortTx(ctx, pgxSender{db})
	}
	return err
}

// mayBeInTransaction reports whether db is not known to be outside a
// transaction: all but a *pgxpool.Pool and a connection outside one. A
// caller's own Querier may wrap a pgx.Tx; outside a transaction the
// failing statement is its own and changes nothing.
func mayBeInTransaction(db Querier) bool {
	if _, ok := db.(*pgxpool.Pool); ok {
		return false
	}
	return connOf(db) == nil || connInTx(db)
}

// claim claims resource's guard row for tok through q (pgsql.Claim).
func claim(ctx context.Context, q Querier, resource string, tok fence.Token) error {
	return pgsql.Claim(ctx, pgxSender{q}, "sqlfence", resource, tok)
}

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

// Claim is [Claim], counting a refusal on the Guard's
// Options.MeterProvider.
func (g *Guard) Claim(ctx context.Context, db Querier, resource string, tok fence.Token) error {
	return Claim(g.count(ctx), db, resource, tok)
}

// Exec is [Exec], counting a refusal on the Guard's Options.MeterProvider.
func (g *Guard) Exec(ctx context.Context, db TxBeginner, resource string, tok fence.Token, sql string, args ...any) (pgconn.CommandTag, error) {
	return Exec(g.count(ctx), db, resource, tok, sql, args...)
}

// count returns ctx carrying the Guard's counter (when it has its own).
func (g *Guard) count(ctx context.Context) context.Context {
	if g.stale == nil {
		return ctx
	}
	return obs.With(ctx, g.stale)
}
