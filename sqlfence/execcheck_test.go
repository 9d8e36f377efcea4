package sqlfence_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

// batchRecorder is a pgx tracer keeping the text of every statement a
// connection sends in a batch.
type batchRecorder struct {
	mu   sync.Mutex
	sqls []string
}

func (r *batchRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (r *batchRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *batchRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *batchRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (r *batchRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.mu.Lock()
	r.sqls = append(r.sqls, d.SQL)
	r.mu.Unlock()
}

// rewriter is a pgx.QueryRewriter replacing the statement with its text.
type rewriter string

func (r rewriter) RewriteQuery(_ context.Context, _ *pgx.Conn, _ string, args []any) (string, []any, error) {
	return string(r), args, nil
}

// endTxSetup creates steps(id, log) and twostep(), a procedure appending
// "a" to the log, committing, then appending "b"; twostep_fn() calls it
// from a function. It returns the pools and connections Exec is tried on:
// pgx's default mode, exec mode and the simple protocol.
func endTxSetup(t *testing.T) (*testenv.PostgresEnv, map[string]sqlfence.TxBeginner, func() string) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE steps (id int PRIMARY KEY, log text NOT NULL)`, `INSERT INTO steps VALUES (1, '')`,
		`CREATE PROCEDURE twostep() LANGUAGE plpgsql AS $$
		BEGIN
			UPDATE steps SET log = log || 'a' WHERE id = 1;
			COMMIT;
			UPDATE steps SET log = log || 'b' WHERE id = 1;
		END $$`,
		`CREATE FUNCTION twostep_fn() RETURNS int LANGUAGE plpgsql AS $$ BEGIN CALL twostep(); RETURN 1; END $$`)
	dbs := map[string]sqlfence.TxBeginner{
		"pool":                 env.Pool,
		"conn":                 connect(t, env.URL),
		"exec-mode pool":       newPool(t, env.URL+"&default_query_exec_mode=exec"),
		"simple-protocol":      newPool(t, env.URL+"&default_query_exec_mode=simple_protocol"),
		"simple-protocol conn": connect(t, env.URL+"&default_query_exec_mode=simple_protocol"),
	}
	log := func() string {
		t.Helper()
		var s string
		if err := env.Pool.QueryRow(ctx, `SELECT log FROM steps WHERE id = 1`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		exec(t, env.Pool, `UPDATE steps SET log = ''`)
		return s
	}
	return env, dbs, log
}

// TestExecChecksWhatMayEndTx: a statement that may end the claim's
// transaction (COMMIT, ROLLBACK, a CALL of a procedure that commits,
// several statements in one string, a prepared statement's name), however
// it is spelled or hidden behind comments, fails in every exec mode, and
// what it ran after its COMMIT does not stay.
func TestExecChecksWhatMayEndTx(t *testing.T) {
	env, dbs, log := endTxSetup(t)
	ctx := testCtx(t)
	tok := fence.Token(100)
	t.Run("prepared statement named like an UPDATE", func(t *testing.T) {
		conn := connect(t, env.URL)
		if _, err := conn.Prepare(ctx, "update-steps", "CALL twostep()"); err != nil {
			t.Fatal(err)
		}
		tok++
		_, err := sqlfence.Exec(ctx, conn, "steps", tok, "update-steps")
		if got := log(); err == nil || strings.Contains(got, "b") {
			t.Fatalf("Exec(update-steps) = %v, log %q; want an error and no b (written after the COMMIT, unfenced)", err, got)
		}
	})
	for _, tc := range []struct {
		name, sql string
		args      []any
	}{
		{"commit after comments", "-- a comment\n  /* another */\tcommit", nil},
		{"COMMIT behind an UPDATE in a comment", "/* UPDATE steps SET log = 'x' */ COMMIT", nil},
		{"ROLLBACK", "ROLLBACK", nil},
		{"CALL behind a nested comment", "/* /* */ UPDATE steps SET log = 'x' */ CALL twostep()", nil},
		{"sqlc-style CALL", "-- name: TwoStep :exec\ncall twostep()", nil},
		{"several statements", "UPDATE steps SET log = log || 'a' WHERE id = 1; COMMIT; UPDATE steps SET log = log || 'b' WHERE id = 1", nil},
		{"a QueryRewriter's several statements", "UPDATE steps SET log = 'x' WHERE id = 1",
			[]any{rewriter("UPDATE steps SET log = log || 'a' WHERE id = 1; COMMIT; UPDATE steps SET log = log || 'b' WHERE id = 1")}},
		{"a QueryRewriter's several statements behind NamedArgs", "UPDATE steps SET log = 'x' WHERE id = 1",
			[]any{pgx.NamedArgs{}, rewriter("UPDATE steps SET log = log || 'a' WHERE id = 1; COMMIT; UPDATE steps SET log = log || 'b' WHERE id = 1")}},
		{"several statements, simple protocol as an argument", "UPDATE steps SET log = log || 'a' WHERE id = 1; COMMIT; UPDATE steps SET log = log || 'b' WHERE id = 1",
			[]any{pgx.QueryExecModeSimpleProtocol}},
	} {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range dbs {
				if !yield(k) {
					return
				}
			}
		}) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				tok++
				_, err := sqlfence.Exec(ctx, dbs[name], "steps", tok, tc.sql, tc.args...)
				if got := log(); err == nil || strings.Contains(got, "b") {
					t.Fatalf("Exec(%q) = %v, log %q; want an error and no b (written after the COMMIT, unfenced)", tc.sql, err, got)
				}
			})
		}
	}
}

// TestExecSingleStatementUnchecked: a single SELECT, INSERT, UPDATE,
// DELETE, MERGE, WITH, VALUES or TABLE statement travels with the claim
// alone, without the check after it, in every exec mode, because it cannot
// end the transaction: a function that commits fails in it (PostgreSQL:
// invalid transaction termination, SQLSTATE 2D000), leaving nothing; so
// does a statement cancelled by statement_timeout.
func TestExecSingleStatementUnchecked(t *testing.T) {
	env, dbs, log := endTxSetup(t)
	ctx := testCtx(t)
	tok := fence.Token(100)
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			for _, sql := range []string{
				"-- name: Step :exec\n/* x */ UPDATE steps SET log = log || 'u' WHERE id = 1",
				"select twostep_fn()",
				"WITH u AS (UPDATE steps SET log = log || 'w' WHERE id = 1) SELECT twostep_fn()",
				"INSERT INTO steps SELECT 2, twostep_fn()::text",
			} {
				tok++
				_, err := sqlfence.Exec(ctx, db, "steps", tok, sql)
				got := log()
				var pe *pgconn.PgError
				if strings.Contains(sql, "twostep_fn") && (!errors.As(err, &pe) || pe.Code != "2D000" || got != "") {
					t.Fatalf("Exec(%q) = %v, log %q; want invalid transaction termination (2D000) and nothing written", sql, err, got)
				}
				if !strings.Contains(sql, "twostep_fn") && (err != nil || got != "u") {
					t.Fatalf("Exec(%q) = %v, log %q; want no error and u", sql, err, got)
				}
			}
		})
	}
	t.Run("statements sent", func(t *testing.T) {
		cfg, err := pgx.ParseConfig(env.URL)
		if err != nil {
			t.Fatal(err)
		}
		rec := &batchRecorder{}
		cfg.Tracer = rec
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		exec(t, conn, `CREATE TEMP TABLE t (id int)`)
		for sql, want := range map[string]int{
			"UPDATE t SET id = 1": 2,
			"-- name: T :exec\n/* x /* y */ */ UPDATE t SET id = 1": 2,
			"values (1)":                 2,
			"TABLE t":                    2,
			"CALL twostep()":             3,
			"UPDATE t SET id = 1;":       3,
			"SET LOCAL work_mem = '1MB'": 3,
		} {
			rec.sqls = nil
			tok++
			if _, err := sqlfence.Exec(ctx, conn, "steps", tok, sql); err != nil && want == 2 {
				t.Fatalf("Exec(%q): %v", sql, err)
			}
			log()
			sent := sql
			if want == 2 { // (ended by a newline, so never a prepared statement's name)
				sent += "\n"
			}
			if len(rec.sqls) != want || rec.sqls[1] != sent {
				t.Errorf("Exec(%q) sent %q; want %d statements, the second %q", sql, rec.sqls, want, sent)
			}
		}
		// pgx's named arguments only put placeholders in: no check
		rec.sqls = nil
		tok++
		if _, err := sqlfence.Exec(ctx, conn, "steps", tok, "UPDATE t SET id = @id", pgx.NamedArgs{"id": 1}); err != nil || len(rec.sqls) != 2 {
			t.Errorf("Exec with pgx.NamedArgs = %v, sent %q; want 2 statements", err, rec.sqls)
		}
	})
	t.Run("statement_timeout", func(t *testing.T) {
		pool := newPool(t, env.URL+"&statement_timeout=100")
		before, err := current(ctx, pool, "timeout")
		if err != nil {
			t.Fatal(err)
		}
		_, err = sqlfence.Exec(ctx, pool, "timeout", 7, "SELECT pg_sleep(2)")
		var pe *pgconn.PgError
		after, cerr := current(ctx, pool, "timeout")
		if !errors.As(err, &pe) || pe.Code != "57014" || cerr != nil || after != before {
			t.Fatalf("Exec past statement_timeout = %v; guard token %d -> %d (%v); want a 57014 error and the claim undone", err, before, after, cerr)
		}
	})
}

// TestExecStatementThatBegins: a statement that opens a transaction block
// (BEGIN) leaves the pipeline's work uncommitted; Exec says so instead of
// reporting success, and rolls it back, claim included, so the connection
// is usable and a lower token than the one it tried is still accepted.
func TestExecStatementThatBegins(t *testing.T) {
	_, dbs, log := endTxSetup(t)
	ctx := testCtx(t)
	tok := fence.Token(1000)
	for _, sql := range []string{"BEGIN", "/* c */ start transaction", "begin work"} {
		for _, name := range slices.Sorted(maps.Keys(dbs)) {
			t.Run(sql+"/"+name, func(t *testing.T) {
				tok += 10
				if _, err := sqlfence.Exec(ctx, dbs[name], "steps", tok, sql); err == nil || !strings.Contains(err.Error(), "left a transaction open") {
					t.Fatalf("Exec(%q) = %v; want an error saying it left a transaction open", sql, err)
				}
				if _, err := sqlfence.Exec(ctx, dbs[name], "steps", tok-5, `UPDATE steps SET log = log || 'c' WHERE id = 1`); err != nil {
					t.Fatalf("Exec with token %d after the BEGIN with %d: %v (the BEGIN's claim stayed, or its connection is still in a transaction)", tok-5, tok, err)
				}
				if got := log(); got != "c" {
					t.Fatalf("log %q after the second Exec; want %q", got, "c")
				}
			})
		}
	}
}

// TestExecPreparedNameReadsAsDML: a statement prepared on the connection
// under a name that reads as an UPDATE ("update steps") does not slip past
// the check as a single UPDATE would. Here it is a CALL that commits part
// way, or a BEGIN: Exec fails, nothing is written after the COMMIT, and the
// BEGIN's work is not reported as committed.
func TestExecPreparedNameReadsAsDML(t *testing.T) {
	env, _, log := endTxSetup(t)
	ctx := testCtx(t)
	prepare := func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Prepare(ctx, "update steps", "CALL twostep()"); err != nil {
			return err
		}
		_, err := c.Prepare(ctx, "update begin", "BEGIN")
		return err
	}
	conn := connect(t, env.URL)
	if err := prepare(ctx, conn); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = prepare
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tok := fence.Token(100)
	for name, db := range map[string]sqlfence.TxBeginner{"conn": conn, "pool": pool} {
		t.Run(name, func(t *testing.T) {
			tok++
			_, err := sqlfence.Exec(ctx, db, "steps", tok, "update steps")
			if got := log(); err == nil || strings.Contains(got, "b") {
				t.Fatalf(`Exec("update steps") = %v, log %q; want an error and no b (written after the COMMIT, unfenced)`, err, got)
			}
			tok++
			tag, err := sqlfence.Exec(ctx, db, "steps", tok, "update begin")
			if err == nil {
				t.Fatalf(`Exec("update begin") = %q, nil; want an error (nothing committed)`, tag)
			}
		})
	}
}

// TestExecPoolConnInTransaction: a *pgxpool.Conn inside the caller's own
// transaction is refused as a *pgx.Conn is (pass its pgx.Tx), before
// anything is sent: the caller's transaction stays open with its work.
func TestExecPoolConnInTransaction(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	pc, err := env.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	exec(t, pc, `BEGIN`, `CREATE TEMP TABLE mine (id int)`)
	_, err = sqlfence.Exec(ctx, pc, "r", 5, `UPDATE mine SET id = 1`)
	if !errors.Is(err, fence.ErrInvalid) || pc.Conn().PgConn().TxStatus() != 'T' {
		t.Fatalf("Exec on a pooled connection inside a transaction = %v, transaction status %c; want fence.ErrInvalid and the transaction still open (T)", err, pc.Conn().PgConn().TxStatus())
	}
	exec(t, pc, `INSERT INTO mine VALUES (1)`, `ROLLBACK`)
}

// TestExecOnTxStatementUndoesClaim: on a pgx.Tx, a statement that rolls
// back to a savepoint the caller made before Exec undoes the claim and
// releases its row lock; what the statement writes after that would
// commit with the caller's transaction unfenced. Exec fails instead, and
// the caller's commit writes nothing.
func TestExecOnTxStatementUndoesClaim(t *testing.T) {
	_, dbs, log := endTxSetup(t)
	ctx := testCtx(t)
	tok := fence.Token(100)
	for _, name := range []string{"pool", "exec-mode pool", "simple-protocol"} {
		t.Run(name, func(t *testing.T) {
			for _, sql := range []string{"ROLLBACK TO SAVEPOINT before_exec", "ROLLBACK TO SAVEPOINT before_exec; UPDATE steps SET log = log || 'b' WHERE id = 1"} {
				tx, err := dbs[name].(interface {
					Begin(context.Context) (pgx.Tx, error)
				}).Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				exec(t, tx, `SAVEPOINT before_exec`)
				tok++
				_, err = sqlfence.Exec(ctx, tx, "steps", tok, sql)
				_ = tx.Commit(ctx)
				if got := log(); err == nil || got != "" {
					t.Errorf("Exec(%q) on a pgx.Tx = %v, log %q after the commit; want an error and nothing written", sql, err, got)
				}
			}
		})
	}
}
