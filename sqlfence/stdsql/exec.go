package stdsql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/pgsql"
	"github.com/fencekit/fencekit/internal/valid"
)

// Exec runs one fenced statement in guard-row mode: it claims resource's
// guard row with tok (as [InTx] does) and runs query with args in the same
// transaction, committed when both succeed, and returns the statement's
// result. Use it for fenced writes that are a single statement (mark a job
// done, move a balance).
//
// Cost: three round trips on one connection of db, those of a plain
// transaction: BEGIN with the claim (one message without arguments),
// the statement, and COMMIT with a check that the statement did not end
// the transaction itself. database/sql sends a statement with arguments
// alone in its message, so the claim cannot share its round trip; pgx's
// sqlfence.Exec takes one. A refusal costs two more: ROLLBACK, and a read
// of the current token for the error.
//
// Rows the statement returns (RETURNING) are dropped; to read them, run
// it in [InTx].
//
// Errors: a [*fence.StaleError] (nothing changed; counted in
// fencekit_stale_rejected); [fence.ErrInvalid] for a nil db, an empty
// query, a bad token or resource (nothing sent); the statement's error
// (nothing changed); an error when the statement ended the transaction (a
// COMMIT inside it: what it did after that COMMIT ran unfenced); ctx's
// error, wrapping context.Cause(ctx) once ctx has ended, as for InTx.
func Exec(ctx context.Context, db *sql.DB, resource string, tok fence.Token, query string, args ...any) (sql.Result, error) {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return nil, err
	}
	if query == "" {
		return nil, valid.Invalid("stdsql: Exec %q: empty query", resource)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, cause.With(ctx, execErr(resource, tok, err))
	}
	defer conn.Close()
	res, err := execOn(ctx, conn, resource, tok, query, args)
	return res, cause.With(ctx, err)
}

// execOn runs Exec's three messages on conn, rolling back on any failure.
func execOn(ctx context.Context, conn *sql.Conn, resource string, tok fence.Token, query string, args []any) (sql.Result, error) {
	mark := rand.Text()
	if _, err := conn.ExecContext(ctx, pgsql.BeginClaim("", mark, pgsql.UpsertClaim(pgsql.Literal(resource), tok))); err != nil {
		rollback(ctx, conn)
		if pgsql.SQLState(err) == "23502" { // the refusal: see pgsql.UpsertClaim
			return nil, pgsql.StaleFromReread(ctx, sender{conn}, "stdsql", resource, tok)
		}
		return nil, execErr(resource, tok, err)
	}
	res, err := conn.ExecContext(ctx, query, args...)
	if err != nil {
		rollback(ctx, conn)
		return nil, execErr(resource, tok, err)
	}
	if _, err := conn.ExecContext(ctx, pgsql.CheckCommit(mark)); err != nil {
		rollback(ctx, conn)
		if strings.Contains(err.Error(), pgsql.EndedText) {
			return nil, fmt.Errorf("stdsql: Exec %q with token %s: the statement ended the transaction (a COMMIT inside it); what it did after that COMMIT ran unfenced", resource, tok)
		}
		return nil, execErr(resource, tok, err)
	}
	return res, nil
}

// execErr names Exec, its resource and its token once in err.
func execErr(resource string, tok fence.Token, err error) error {
	return fmt.Errorf("stdsql: Exec %q with token %s: %w", resource, tok, err)
}

// rollback ends conn's transaction even when ctx is already done, so that
// the connection goes back to the pool clean; when that fails it closes
// the connection (driver.ErrBadConn from Raw), and the server rolls back.
func rollback(ctx context.Context, conn *sql.Conn) {
	rctx, cancel := pgsql.Detached(ctx)
	defer cancel()
	if _, err := conn.ExecContext(rctx, "ROLLBACK"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
