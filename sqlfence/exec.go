package sqlfence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/pgsql"
	"github.com/fencekit/fencekit/internal/valid"
)

// execClaimSQL claims resource's guard row for token $2 as lockClaimSQL
// does (InTx's claim: when the row already holds $2 it only locks the row
// and writes no new row version) and fails when it is refused (the NOT
// NULL token, SQLSTATE 23502), so that the statements sent with it in the
// same implicit transaction do not run. It also marks the transaction with
// $3 (transaction-locally), which pgsql.ExecCheckSQL finds only while the
// transaction is still the claim's. The CTE runs although the SELECT does
// not read it (PostgreSQL runs every data-modifying WITH statement once).
const execClaimSQL = `WITH claimed AS (` + lockClaimSQL + `)
SELECT set_config('` + pgsql.ExecMarker + `', $3, true)`

// batchSender sends a batch of statements as one pipeline: *pgx.Conn and
// *pgxpool.Pool.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Exec runs one fenced statement in guard-row mode: it claims resource's
// guard row with tok (as [InTx] does) and runs sql with args in the same
// transaction, committed when both succeed. Use it for fenced writes that
// are a single statement (mark a job done, move a balance).
//
// Cost: on a *pgx.Conn or *pgxpool.Pool one round trip: the claim and the
// statement travel as one pipeline, an implicit transaction that ends with
// it, so a refused claim stops the statement and a failed statement undoes
// the claim. On a pgx.Tx, the claim and the statement are a round trip
// each and commit with the caller's transaction. A refusal costs one round
// trip more, to read the current token.
//
// Errors: a [*fence.StaleError] (nothing changed; counted in
// fencekit_stale_rejected); [fence.ErrInvalid] for a nil db, an empty sql,
// a bad token or resource (nothing sent); the statement's error
// (nothing changed); ctx's error, wrapping context.Cause(ctx) once ctx has
// ended, as for InTx.
func Exec(ctx context.Context, db TxBeginner, resource string, tok fence.Token, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return pgconn.CommandTag{}, err
	}
	if sql == "" {
		return pgconn.CommandTag{}, valid.Invalid("sqlfence: Exec %q: empty sql", resource)
	}
	if tx, ok := db.(pgx.Tx); ok {
		if err := claim(ctx, tx, resource, tok); err != nil {
			return pgconn.CommandTag{}, cause.With(ctx, err)
		}
		tag, err := tx.Exec(ctx, sql, args...)
		switch {
		case err != nil:
			err = fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, err)
		case tx.Conn().PgConn().TxStatus() != 'T':
			err = errStatementEnded(resource, tok)
		}
		return tag, cause.With(ctx, err)
	}
	if c, ok := db.(*pgx.Conn); ok && c.PgConn().TxStatus() != 'I' {
		return pgconn.CommandTag{}, valid.Invalid("sqlfence: Exec %q: the connection is inside a transaction; pass its pgx.Tx", resource)
	}
	bs, ok := db.(batchSender)
	if !ok {
		return pgconn.CommandTag{}, valid.Invalid("sqlfence: Exec %q: %T sends no batch; pass a *pgx.Conn, *pgxpool.Pool or pgx.Tx", resource, db)
	}
	tag, err := execBatch(ctx, bs, resource, tok, sql, args)
	return tag, cause.With(ctx, err)
}

// execBatch sends the claim and the statement as one pipeline.
func execBatch(ctx context.Context, bs batchSender, resource string, tok fence.Token, sql string, args []any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	mark := strconv.FormatUint(rand.Uint64(), 36)
	b.Queue(execClaimSQL, resource, int64(tok), mark)
	b.Queue(sql, args...)
	b.Queue(pgsql.ExecCheckSQL, mark)
	br := bs.SendBatch(ctx, b)
	_, claimErr := br.Exec()
	tag, stmtErr := br.Exec()
	_, checkErr := br.Exec()
	closeErr := br.Close()
	var pe *pgconn.PgError
	switch {
	case endedStatement(claimErr) || endedStatement(stmtErr) || endedStatement(checkErr) || endedStatement(closeErr):
		// (a simple-protocol batch reports the check's failure when it closes)
		return pgconn.CommandTag{}, errStatementEnded(resource, tok)
	case errors.As(claimErr, &pe) && pe.Code == "23502" && pe.TableName == "fencekit_tokens": // refused: nothing ran
		q, ok := bs.(Querier)
		if !ok {
			return pgconn.CommandTag{}, fmt.Errorf("sqlfence: %q refused token %s", resource, tok)
		}
		return pgconn.CommandTag{}, pgsql.StaleFromReread(ctx, pgxSender{q}, "sqlfence", resource, tok)
	case claimErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, claimErr)
	case stmtErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, stmtErr)
	case checkErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, checkErr)
	case closeErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, closeErr)
	}
	return tag, nil
}

// errStatementEnded is Exec's error when its statement ended the claim's
// transaction itself.
func errStatementEnded(resource string, tok fence.Token) error {
	return fmt.Errorf("sqlfence: Exec %q with token %s: the statement ended the transaction (a COMMIT inside it); its work after that COMMIT is not fenced (on a pool or connection Exec rolled it back)", resource, tok)
}

// endedStatement reports execCheckSQL's failure (in the simple protocol
// pgx reports it as the batch's error, not a *pgconn.PgError of its own).
func endedStatement(err error) bool {
	return err != nil && strings.Contains(err.Error(), pgsql.ExecEndedText)
}
