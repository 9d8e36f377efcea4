package stdsql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/pgsql"
	"github.com/fencekit/fencekit/internal/valid"
)

// Execer runs one statement: *sql.DB, *sql.Conn and *sql.Tx. On a DB or a
// Conn outside a transaction, each statement commits at once (autocommit).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Execer = (*sql.DB)(nil)
	_ Execer = (*sql.Conn)(nil)
	_ Execer = (*sql.Tx)(nil)
)

// Claim records tok as resource's newest token in its guard row
// (fencekit_tokens) without writing data, so that every older token is
// refused from then on. On a *sql.DB or *sql.Conn it commits at once: call
// it right after acquiring a lease, before writing anything. On a *sql.Tx
// it lives until that transaction ends and holds the guard row's lock
// until then: call it first in your transaction, then write, then commit.
// A ROLLBACK TO SAVEPOINT made before the claim undoes it and frees the
// row, so that later writes are not fenced: claim again after one.
//
// Claim costs one round trip (two in the rare race where a newer holder
// committed while the claim waited on the row lock), and one more after a
// refusal on any handle but a *sql.DB (the statement that makes it fail).
//
// Errors: a [*fence.StaleError] when a token greater than tok was already
// accepted (nothing changed; on a *sql.Tx (or a type embedding one, such
// as sqlx.Tx), or a *sql.Conn after a raw BEGIN, Claim also makes the
// transaction fail, so that its Commit rolls back and returns the
// driver's error, not a stale one (pgx.ErrTxCommitRollback from pgx's
// stdlib, pq.ErrInFailedTransaction from lib/pq): roll it back, as a later
// ROLLBACK TO SAVEPOINT clears the failure; a refused [Table] write there does the same); [fence.ErrInvalid] for a
// nil db, a bad token or resource (nothing sent); ctx's error, wrapping
// context.Cause(ctx) once ctx has ended; the driver's error (for example a
// missing fencekit_tokens table: run migrations.Up).
func Claim(ctx context.Context, db Execer, resource string, tok fence.Token) error {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return err
	}
	return cause.With(ctx, abortIfStale(ctx, db, pgsql.Claim(ctx, sender{db}, "stdsql", resource, tok)))
}

// abortIfStale makes db's transaction fail (pgsql.AbortTx) when err is a
// refusal and db may be inside a transaction: all but a *sql.DB (a
// *sql.Conn after a raw BEGIN, a type embedding a *sql.Tx such as
// sqlx.Tx). Outside a transaction, the failing statement is its own and
// changes nothing. It returns err.
func abortIfStale(ctx context.Context, db Execer, err error) error {
	if _, isDB := db.(*sql.DB); !isDB && errors.Is(err, fence.ErrStale) {
		pgsql.AbortTx(ctx, sender{db})
	}
	return err
}

// InTx begins a transaction on db, claims resource's guard row with tok (as
// [Claim] does), runs fn with the transaction and commits. The claim holds
// the guard row's lock until commit, so fenced transactions on one
// resource never interleave: a newer holder's claim waits, and an older
// holder's claim waits and then fails. It uses db's default isolation
// level (READ COMMITTED is enough) and does not retry.
//
// Cost: the round trips of the same transaction unfenced (BEGIN, fn's
// statements, COMMIT) plus two: the claim, and a check before COMMIT that
// fn left InTx's transaction open (database/sql sends BEGIN and COMMIT
// alone, so neither can travel with them). For a single statement, [Exec]
// costs the three round trips of a plain transaction.
//
// fn must leave the transaction open: when it ends it itself (COMMIT or
// ROLLBACK through tx.ExecContext, tx.Commit, tx.Rollback), InTx returns an
// error saying "fn ended the transaction", rolls back a transaction fn
// began and commits nothing; statements fn ran after its COMMIT were not
// fenced.
//
// Errors: a [*fence.StaleError] (fn not called, nothing changed); an
// error saying "fn ignored a failed statement" when fn returned nil after
// one failed (perhaps a refusal), which left the transaction unable to
// commit; [fence.ErrInvalid] for a nil db or fn, a bad token or resource (nothing
// sent); fn's error after the rollback, and every other error, wrapped once
// with InTx, the resource and the token; once ctx has ended, errors also
// wrap context.Cause(ctx) (for a lease's Context, lease.ErrLost).
func InTx(ctx context.Context, db *sql.DB, resource string, tok fence.Token, fn func(*sql.Tx) error) error {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return err
	}
	if fn == nil {
		return valid.Invalid("stdsql: InTx(%q): nil fn", resource)
	}
	return cause.With(ctx, inTx(ctx, db, resource, tok, fn))
}

// inTx is InTx after its checks.
func inTx(ctx context.Context, db *sql.DB, resource string, tok fence.Token, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return txErr(resource, tok, "begin: ", err)
	}
	committed := false
	defer func() {
		// Also when fn panics: the panic continues after the rollback.
		if !committed {
			_ = tx.Rollback()
		}
	}()
	mark := rand.Text()
	var claimed bool
	var cur int64
	var set string
	found, err := sender{tx}.Row(ctx, pgsql.ClaimMarkSQL, []any{resource, int64(tok), mark}, &claimed, &cur, &set)
	if err := pgsql.Claimed(ctx, sender{tx}, "stdsql", resource, tok, found && claimed, cur, err); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return txErr(resource, tok, "", err)
	}
	if _, err := tx.ExecContext(ctx, pgsql.ExecCheckSQL, mark); err != nil {
		if endedByFn(err) {
			return errFnEnded(resource, tok)
		}
		if pgsql.SQLState(err) == "25P02" { // COMMIT would roll back
			return txErr(resource, tok, ignoredText, err)
		}
		return txErr(resource, tok, "commit: ", err)
	}
	if err := tx.Commit(); err != nil {
		return txErr(resource, tok, "commit: ", err)
	}
	committed = true
	return nil
}

// endedByFn reports whether the check before COMMIT found InTx's
// transaction ended by fn: closed by tx.Commit or tx.Rollback, or no
// longer the one the claim marked.
func endedByFn(err error) bool {
	return errors.Is(err, sql.ErrTxDone) || strings.Contains(err.Error(), pgsql.ExecEndedText)
}

// ignoredText starts InTx's error when fn ignored a failed statement.
const ignoredText = "fn ignored a failed statement (a refused Claim or Table write is one), so InTx rolled back: "

// errFnEnded is InTx's error when fn ended the transaction itself: what fn
// wrote after that was not fenced.
func errFnEnded(resource string, tok fence.Token) error {
	return fmt.Errorf("stdsql: InTx(%q) with token %s: %s (COMMIT, ROLLBACK, tx.Commit or tx.Rollback inside fn): InTx committed nothing more, and fn's later statements ran unfenced", resource, tok, pgsql.EndedText)
}

// txErr names InTx, its resource and its token once in err, a step's
// error ("begin: ", "commit: ") or fn's own ("").
func txErr(resource string, tok fence.Token, step string, err error) error {
	return fmt.Errorf("stdsql: InTx(%q) with token %s: %s%w", resource, tok, step, err)
}

// sender sends statements through database/sql, for pgsql.
type sender struct{ db Execer }

func (s sender) Row(ctx context.Context, query string, args []any, dest ...any) (bool, error) {
	err := s.db.QueryRowContext(ctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (s sender) Exec(ctx context.Context, query string, args []any) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// errNilDB is the error for a nil database handle.
var errNilDB = valid.Invalid("stdsql: nil database handle")

// checkArgs validates the handle, the resource and the token, then ctx,
// before anything is sent.
func checkArgs(ctx context.Context, db any, resource string, tok fence.Token) error {
	return pgsql.CheckArgs(ctx, "stdsql", isNil(db), errNilDB, resource, tok)
}

// isNil reports whether db is nil or a nil *sql.DB, *sql.Conn or *sql.Tx,
// which would panic on first use.
func isNil(db any) bool {
	switch db := db.(type) {
	case nil:
		return true
	case *sql.DB:
		return db == nil
	case *sql.Conn:
		return db == nil
	case *sql.Tx:
		return db == nil
	}
	return false
}
