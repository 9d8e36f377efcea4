package sqlfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencekit/fencekit/fence"
)

// execClaimSQL claims resource's guard row for token $2 as claimSQL does,
// but fails when it is refused (division by zero: no row claimed), so that
// the statements sent with it in the same implicit transaction do not run.
const execClaimSQL = `WITH claimed AS (` + claimInsert + `)
SELECT 1 / count(*) FROM claimed`

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
// a zero token or one above [fence.MaxToken], or a resource
// [fence.ValidateName] refuses (nothing sent); the statement's error
// (nothing changed); ctx's error, wrapping context.Cause(ctx) once ctx has
// ended, as for InTx.
func Exec(ctx context.Context, db TxBeginner, resource string, tok fence.Token, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return pgconn.CommandTag{}, err
	}
	if sql == "" {
		return pgconn.CommandTag{}, fence.Invalid("sqlfence: Exec %q: empty sql", resource)
	}
	if tx, ok := db.(pgx.Tx); ok {
		if err := claim(ctx, tx, resource, tok); err != nil {
			return pgconn.CommandTag{}, withCause(ctx, err)
		}
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			err = fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, err)
		}
		return tag, withCause(ctx, err)
	}
	bs, ok := db.(batchSender)
	if !ok {
		return pgconn.CommandTag{}, fence.Invalid("sqlfence: Exec %q: %T sends no batch; pass a *pgx.Conn, *pgxpool.Pool or pgx.Tx", resource, db)
	}
	tag, err := execBatch(ctx, bs, resource, tok, sql, args)
	return tag, withCause(ctx, err)
}

// execBatch sends the claim and the statement as one pipeline.
func execBatch(ctx context.Context, bs batchSender, resource string, tok fence.Token, sql string, args []any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue(execClaimSQL, resource, int64(tok))
	b.Queue(sql, args...)
	br := bs.SendBatch(ctx, b)
	_, claimErr := br.Exec()
	tag, stmtErr := br.Exec()
	closeErr := br.Close()
	var pe *pgconn.PgError
	switch {
	case errors.As(claimErr, &pe) && pe.Code == "22012": // refused: nothing ran
		q, ok := bs.(Querier)
		if !ok {
			return pgconn.CommandTag{}, fmt.Errorf("sqlfence: %q refused token %s", resource, tok)
		}
		return pgconn.CommandTag{}, staleFromReread(ctx, q, resource, tok)
	case claimErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, claimErr)
	case stmtErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, stmtErr)
	case closeErr != nil:
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, closeErr)
	}
	return tag, nil
}
