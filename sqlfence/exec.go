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
	"github.com/jackc/pgx/v5/pgxpool"

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
// $3 (pgsql.AddMark), which pgsql.ExecCheckSQL finds only while the
// transaction is still the claim's. The CTE runs although the SELECT does
// not read it (PostgreSQL runs every data-modifying WITH statement once).
const execClaimSQL = `WITH claimed AS (` + lockClaimSQL + `)
SELECT ` + pgsql.AddMark

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
// the claim. A statement that could end that transaction itself (COMMIT,
// ROLLBACK, a CALL or DO block that commits, several statements in one
// string under the simple protocol) is followed by a third, a check that
// fails, undoing what ran after the COMMIT, when the transaction is no
// longer the claim's. A single SELECT, INSERT, UPDATE, DELETE, MERGE, WITH,
// VALUES or TABLE statement without a semicolon (comments before it
// allowed) cannot, and is sent without the check: two statements, about
// twice an autocommit UPDATE's server work (docs/performance.md). It is
// sent as text, never taken for the name of a statement prepared on the
// connection (such a name, "update job", fails as SQL); with a
// pgx.QueryRewriter other than pgx.NamedArgs it is checked. On a pgx.Tx,
// the claim and the statement (with the check) are a round trip each and
// commit with the caller's transaction. A refusal costs one round trip
// more, to read the current token.
//
// Exec returns the statement's command tag: a WHERE that matched no row
// is no error (check RowsAffected), and rows the statement returns
// (RETURNING, SELECT) are dropped; to read them, run it in [InTx].
//
// Errors: a [*fence.StaleError] (nothing changed; counted in
// fencekit_stale_rejected; on a pgx.Tx, Exec also makes the caller's
// transaction fail, as [Claim] does); [fence.ErrInvalid] for a nil db, an
// empty sql, a bad token or resource, a *pgx.Conn or *pgxpool.Conn inside
// a transaction (nothing sent); the statement's error
// (nothing changed); an error when the statement left a transaction open
// (a BEGIN: Exec rolls it back) or, on a pgx.Tx, undid the claim (a
// ROLLBACK TO SAVEPOINT: roll the transaction back); ctx's error, wrapping context.Cause(ctx) once ctx has
// ended, as for InTx.
func Exec(ctx context.Context, db TxBeginner, resource string, tok fence.Token, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return pgconn.CommandTag{}, err
	}
	if sql == "" {
		return pgconn.CommandTag{}, valid.Invalid("sqlfence: Exec %q: empty sql", resource)
	}
	if tx, ok := db.(pgx.Tx); ok {
		tag, err := execOnTx(ctx, tx, resource, tok, sql, args)
		return tag, cause.With(ctx, err)
	}
	if connInTx(db) {
		return pgconn.CommandTag{}, errConnInTx("Exec", resource)
	}
	bs, ok := db.(batchSender)
	if !ok {
		return pgconn.CommandTag{}, valid.Invalid("sqlfence: Exec %q: %T sends no batch; pass a *pgx.Conn, *pgxpool.Pool or pgx.Tx", resource, db)
	}
	tag, err := execBatch(ctx, bs, resource, tok, sql, args)
	return tag, cause.With(ctx, err)
}

// execOnTx claims with a mark in tx, then sends the statement and
// pgsql.ExecCheckSQL as one pipeline: the check fails when the statement
// ended tx or rolled back to a savepoint made before the claim, undoing the
// claim and releasing its row lock, so that what it wrote after that
// would commit unfenced with tx.
func execOnTx(ctx context.Context, tx pgx.Tx, resource string, tok fence.Token, sql string, args []any) (pgconn.CommandTag, error) {
	mark, err := claimMarked(ctx, tx, resource, tok)
	if err != nil {
		return pgconn.CommandTag{}, abortIfStale(ctx, tx, err) // as Claim does
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue(pgsql.ExecCheckSQL, mark)
	br := tx.SendBatch(ctx, b)
	tag, stmtErr := br.Exec()
	_, checkErr := br.Exec()
	closeErr := br.Close()
	if endedStatement(stmtErr) || endedStatement(checkErr) || endedStatement(closeErr) {
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: the statement undid the claim (a COMMIT, ROLLBACK or ROLLBACK TO SAVEPOINT inside it); roll the transaction back", resource, tok)
	}
	if err := execErr(resource, tok, stmtErr, checkErr, closeErr); err != nil {
		return pgconn.CommandTag{}, err
	}
	if tx.Conn().PgConn().TxStatus() != 'T' {
		return pgconn.CommandTag{}, errStatementEnded(resource, tok)
	}
	return tag, nil
}

// execBatch sends the claim and the statement as one pipeline, and after
// them pgsql.ExecCheckSQL unless the statement cannot end the transaction.
func execBatch(ctx context.Context, bs batchSender, resource string, tok fence.Token, sql string, args []any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	checked := !cannotEndTx(sql) || rewritten(args)
	if checked {
		mark := strconv.FormatUint(rand.Uint64(), 36)
		b.Queue(execClaimSQL, resource, int64(tok), mark)
		b.Queue(sql, args...)
		b.Queue(pgsql.ExecCheckSQL, mark)
	} else {
		// The newline keeps pgx from taking sql for the name of a
		// statement prepared on the connection, which could be anything.
		b.Queue(lockClaimSQL, resource, int64(tok))
		b.Queue(sql+"\n", args...)
	}
	// A statement may leave a transaction open (BEGIN), so that nothing
	// commits at the pipeline's end: Exec looks at the connection after it.
	conn := connOf(bs)
	if p, ok := bs.(*pgxpool.Pool); ok && checked {
		pc, err := p.Acquire(ctx)
		if err != nil {
			return pgconn.CommandTag{}, execErr(resource, tok, err)
		}
		defer pc.Release()
		bs, conn = pc, pc.Conn()
	}
	br := bs.SendBatch(ctx, b)
	_, claimErr := br.Exec()
	tag, stmtErr := br.Exec()
	var checkErr error
	if checked {
		_, checkErr = br.Exec()
	}
	closeErr := br.Close()
	opened := conn != nil && !conn.IsClosed() && conn.PgConn().TxStatus() != 'I'
	if opened {
		rollbackOpen(ctx, conn)
	}
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
	}
	if err := execErr(resource, tok, claimErr, stmtErr, checkErr, closeErr); err != nil {
		return pgconn.CommandTag{}, err
	}
	if opened {
		return pgconn.CommandTag{}, fmt.Errorf("sqlfence: Exec %q with token %s: the statement left a transaction open (a BEGIN); Exec rolled it back, claim included", resource, tok)
	}
	return tag, nil
}

// execErr returns the first error of errs, naming Exec, resource and tok.
func execErr(resource string, tok fence.Token, errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("sqlfence: Exec %q with token %s: %w", resource, tok, err)
		}
	}
	return nil
}

// connOf returns the connection of a *pgx.Conn or *pgxpool.Conn, or nil.
func connOf(db any) *pgx.Conn {
	switch d := db.(type) {
	case *pgx.Conn:
		return d
	case *pgxpool.Conn:
		return d.Conn()
	}
	return nil
}

// connInTx reports whether db is a *pgx.Conn or *pgxpool.Conn inside a
// transaction.
func connInTx(db any) bool {
	c := connOf(db)
	return c != nil && c.PgConn().TxStatus() != 'I'
}

// errConnInTx is the error of InTx and Exec on a connection inside a
// transaction.
func errConnInTx(call, resource string) error {
	return valid.Invalid("sqlfence: %s(%q): the connection is inside a transaction; pass the pgx.Tx that began it, or after a raw BEGIN call Claim on the connection (it lasts until that transaction ends)", call, resource)
}

// rewritten reports whether args begin with a pgx.QueryRewriter that may
// change the statement's text (any but pgx's named arguments, which only
// replace @names with placeholders), so that cannotEndTx cannot judge it.
// pgx takes every leading rewriter off the arguments and applies the last.
func rewritten(args []any) bool {
	for _, a := range args {
		switch a.(type) {
		case pgx.NamedArgs, pgx.StrictNamedArgs:
		case pgx.QueryRewriter:
			return true
		default:
			return false
		}
	}
	return false
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

// cannotEndTx reports whether sql is one statement that cannot end the
// transaction it runs in: it begins (after blanks and comments) with
// SELECT, INSERT, UPDATE, DELETE, MERGE, WITH, VALUES or TABLE and holds
// no semicolon, so that even the simple protocol, which runs a string of
// several statements, sees one. Such a statement commits nothing itself:
// the functions and triggers it runs cannot (PostgreSQL refuses COMMIT in
// them: invalid transaction termination). What else may end it (COMMIT,
// CALL or DO of code that commits, several statements) is checked.
func cannotEndTx(sql string) bool {
	if strings.IndexByte(sql, ';') >= 0 {
		return false
	}
	s := skipBlanks(sql)
	n := 0
	for n < len(s) && isIdentByte(s[n]) {
		n++
	}
	switch strings.ToUpper(s[:n]) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "WITH", "VALUES", "TABLE":
		// followed by a blank, a comment or "(", unlike most names of
		// prepared statements ("update-job")
		rest := s[n:]
		return rest != "" && (strings.IndexByte(" \t\n\r\f(", rest[0]) >= 0 || skipBlanks(rest) != rest)
	}
	return false
}

// skipBlanks returns sql without its leading white space and comments
// (-- to the end of the line; /* */, nested as PostgreSQL nests them).
func skipBlanks(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\n\r\f\v")
		switch {
		case strings.HasPrefix(sql, "--"):
			i := strings.IndexAny(sql, "\n\r")
			if i < 0 {
				return ""
			}
			sql = sql[i:]
		case strings.HasPrefix(sql, "/*"):
			depth, i := 0, 0
			for i < len(sql) {
				switch {
				case strings.HasPrefix(sql[i:], "/*"):
					depth++
					i += 2
				case strings.HasPrefix(sql[i:], "*/"):
					depth--
					i += 2
				default:
					i++
				}
				if depth == 0 {
					break
				}
			}
			if depth != 0 {
				return ""
			}
			sql = sql[i:]
		default:
			return sql
		}
	}
}

// isIdentByte reports whether c may continue a PostgreSQL keyword or
// identifier (any byte of a non-ASCII letter included).
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
