package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

// docTable makes the table data in a fresh schema and returns a write of
// v to its row "doc".
func docTable(t *testing.T) (*testenv.PostgresEnv, context.Context, func(db execer, v string) error) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	return env, ctx, func(db execer, v string) error {
		_, err := db.Exec(ctx, `INSERT INTO data (k, v) VALUES ('doc', $1) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`, v)
		return err
	}
}

// TestInTxFnEndsTransaction runs InTx with token 10 whose fn ends the
// transaction itself (COMMIT, ROLLBACK, COMMIT then BEGIN, tx.Commit),
// after which a newer holder claims with token 20 and writes, and then the
// old fn writes again and returns nil. InTx must return an error naming the
// problem, never nil, and must not commit what fn wrote after its COMMIT
// inside a transaction it began itself. On every handle.
func TestInTxFnEndsTransaction(t *testing.T) {
	env, ctx, write := docTable(t)
	ends := []struct {
		name string
		end  func(tx pgx.Tx) error
		// lateCommitted: the late write runs in autocommit, so it is
		// committed before InTx can see anything (not preventable).
		lateCommitted bool
	}{
		{"COMMIT", func(tx pgx.Tx) error { _, err := tx.Exec(ctx, "COMMIT"); return err }, true},
		{"ROLLBACK", func(tx pgx.Tx) error { _, err := tx.Exec(ctx, "ROLLBACK"); return err }, true},
		{"COMMIT then BEGIN", func(tx pgx.Tx) error { _, err := tx.Exec(ctx, "COMMIT; BEGIN"); return err }, false},
		{"COMMIT AND CHAIN", func(tx pgx.Tx) error { _, err := tx.Exec(ctx, "COMMIT AND CHAIN"); return err }, false},
		{"tx.Commit", func(tx pgx.Tx) error { return tx.Commit(ctx) }, false},
	}
	handles := []struct {
		name string
		db   func(t *testing.T) sqlfence.TxBeginner
	}{
		{"pool", func(*testing.T) sqlfence.TxBeginner { return env.Pool }},
		{"conn", func(t *testing.T) sqlfence.TxBeginner { return connect(t, env.URL) }},
		{"conn exec mode", func(t *testing.T) sqlfence.TxBeginner { return connect(t, env.URL+"&default_query_exec_mode=exec") }},
		{"pool conn", func(t *testing.T) sqlfence.TxBeginner {
			c, err := env.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Release)
			return c
		}},
	}
	n := 0
	for _, h := range handles {
		for _, e := range ends {
			t.Run(h.name+"/"+e.name, func(t *testing.T) {
				n++
				resource := "doc-" + strings.ReplaceAll(h.name+e.name, " ", "")
				old, newer := fence.Token(100*n+10), fence.Token(100*n+20)
				err := sqlfence.InTx(ctx, h.db(t), resource, old, func(tx pgx.Tx) error {
					if err := write(tx, "A early"); err != nil {
						return err
					}
					if err := e.end(tx); err != nil {
						return err
					}
					// The claim is gone with A's transaction: B claims and writes.
					if err := sqlfence.InTx(ctx, env.Pool, resource, newer, func(btx pgx.Tx) error {
						return write(btx, "B")
					}); err != nil {
						t.Errorf("B's InTx: %v", err)
					}
					_ = write(tx, "A late") // ignored, as careless code does
					return nil
				})
				if err == nil || !strings.Contains(err.Error(), "fn ended the transaction") {
					t.Fatalf("InTx whose fn ended the transaction returned %v; want an error saying fn ended the transaction", err)
				}
				if errors.Is(err, fence.ErrStale) {
					t.Fatalf("error %v matches fence.ErrStale; nothing was refused as stale", err)
				}
				got := readData(t, env.Pool, "doc")
				if !e.lateCommitted && got != "B" {
					t.Fatalf("row after InTx = %q, want B's write (A's late write must not be committed)", got)
				}
				if cur, err := current(ctx, env.Pool, resource); err != nil || cur != newer {
					t.Fatalf("guard token %v, %v; want %v", cur, err, newer)
				}
			})
		}
	}
}

// TestInTxFnEndsOuterTransaction is TestInTxFnEndsTransaction on a pgx.Tx
// (InTx's transaction is a savepoint): fn's COMMIT ends the caller's
// transaction, and InTx must say so.
func TestInTxFnEndsOuterTransaction(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	for _, end := range []string{"COMMIT", "ROLLBACK", "COMMIT; BEGIN"} {
		t.Run(end, func(t *testing.T) {
			outer, err := env.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer outer.Rollback(ctx)
			err = sqlfence.InTx(ctx, outer, "outer", 5, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, end)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "fn ended the transaction") {
				t.Fatalf("InTx on a pgx.Tx whose fn sent %s returned %v; want an error saying fn ended the transaction", end, err)
			}
		})
	}
}

// TestInTxOnTxFnUndoesClaim: InTx on a pgx.Tx (a savepoint) whose fn rolls
// back to that savepoint, or to one the caller made before InTx, undoing
// the claim and freeing the guard row; a newer holder then claims and
// writes, and the old fn writes again and returns nil. InTx must fail, and
// the caller's commit must not land the old write after the newer one.
func TestInTxOnTxFnUndoesClaim(t *testing.T) {
	env, ctx, write := docTable(t)
	for i, savepoint := range []string{"sp_1", "before_intx"} { // sp_1: pgx's name for InTx's savepoint
		t.Run(savepoint, func(t *testing.T) {
			resource := "undo-" + savepoint
			old, newer := fence.Token(10*i+10), fence.Token(10*i+15)
			outer, err := env.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer outer.Rollback(ctx)
			exec(t, outer, "SAVEPOINT before_intx")
			err = sqlfence.InTx(ctx, outer, resource, old, func(tx pgx.Tx) error {
				exec(t, tx, "ROLLBACK TO SAVEPOINT "+savepoint)
				if err := sqlfence.InTx(ctx, env.Pool, resource, newer, func(btx pgx.Tx) error {
					return write(btx, "B")
				}); err != nil {
					t.Errorf("B's InTx: %v", err)
				}
				return write(tx, "A late")
			})
			_ = outer.Commit(ctx)
			if err == nil || !strings.Contains(err.Error(), "fn ended the transaction") {
				t.Errorf("InTx on a pgx.Tx whose fn rolled back to %s returned %v; want an error saying fn ended the transaction", savepoint, err)
			}
			if got := readData(t, env.Pool, "doc"); got != "B" {
				t.Errorf("row after the caller's commit = %q, want B's write (A's token %v is older than B's %v)", got, old, newer)
			}
		})
	}
}

// TestInTxOnTxNestedFencedCalls: inside InTx on a pgx.Tx, fn's own fenced
// calls on its transaction (Exec, InTx, Claim, on other resources) claim
// too, and leave InTx's claim standing: InTx commits.
func TestInTxOnTxNestedFencedCalls(t *testing.T) {
	env, ctx, write := docTable(t)
	outer, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Rollback(ctx)
	err = sqlfence.InTx(ctx, outer, "nested", 3, func(tx pgx.Tx) error {
		if _, err := sqlfence.Exec(ctx, tx, "nested-exec", 3, `SELECT 1`); err != nil {
			return err
		}
		if err := sqlfence.InTx(ctx, tx, "nested-intx", 3, func(inner pgx.Tx) error { return write(inner, "inner") }); err != nil {
			return err
		}
		return sqlfence.Claim(ctx, tx, "nested-claim", 3)
	})
	if err != nil {
		t.Fatalf("InTx on a pgx.Tx whose fn made fenced calls on its transaction: %v", err)
	}
	if err := outer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readData(t, env.Pool, "doc"); got != "inner" {
		t.Fatalf("row after the commit = %q, want the inner InTx's write", got)
	}
}

// TestClaimRefusedInTxFailsCommit: a Claim, InTx, Exec or Table write
// refused inside the caller's transaction (a pgx.Tx, or for Claim and
// Table a connection after BEGIN), also one nested in InTx's fn, whose
// error careless code ignores,
// must leave that transaction unable to commit: otherwise the old
// holder's writes in it land after the newer holder's.
func TestClaimRefusedInTxFailsCommit(t *testing.T) {
	env, ctx, write := docTable(t)
	if err := sqlfence.Claim(ctx, env.Pool, "refused", 20); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, env.URL)
	exec(t, env.Pool, `CREATE TABLE acct (id text PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, v text)`,
		`INSERT INTO acct VALUES ('a', 0, 'none'), ('newer', 20, 'B')`)
	accounts, err := sqlfence.NewTable("acct", "id", "lock_version", "v")
	if err != nil {
		t.Fatal(err)
	}
	guarded := accounts.WithGuard("refused") // the guard refuses token 10
	stale := func(t *testing.T, err error) { wantStale(t, err, "refused", 10, 20) }
	execStale := func(tx pgx.Tx) error {
		_, err := sqlfence.Exec(ctx, tx, "refused", 10, `UPDATE data SET v = 'A by Exec'`)
		return err
	}
	for _, c := range []struct {
		name string
		call func(tx pgx.Tx) error
		want func(*testing.T, error)
	}{
		{"Claim on a pgx.Tx", func(tx pgx.Tx) error { return sqlfence.Claim(ctx, tx, "refused", 10) }, stale},
		{"Claim on a conn in a BEGIN", func(pgx.Tx) error { return sqlfence.Claim(ctx, conn, "refused", 10) }, stale},
		{"InTx on a pgx.Tx", func(tx pgx.Tx) error {
			return sqlfence.InTx(ctx, tx, "refused", 10, func(tx pgx.Tx) error { return write(tx, "A in fn") })
		}, stale},
		{"Exec on a pgx.Tx", execStale, stale},
		{"guarded Table.Update on a pgx.Tx", func(tx pgx.Tx) error { return guarded.Update(ctx, tx, "a", 10, "A") }, stale},
		{"guarded Table.Upsert on a pgx.Tx", func(tx pgx.Tx) error { return guarded.Upsert(ctx, tx, "a", 10, "A") }, stale},
		{"guarded Table.Insert on a pgx.Tx", func(tx pgx.Tx) error { return guarded.Insert(ctx, tx, "b", 10, "A") }, stale},
		{"guarded Table.Claim on a pgx.Tx", func(tx pgx.Tx) error {
			var v string
			return guarded.Claim(ctx, tx, "a", 10, &v)
		}, stale},
		{"Table.Update on a pgx.Tx, refused by the row", func(tx pgx.Tx) error { return accounts.Update(ctx, tx, "newer", 10, "A") },
			func(t *testing.T, err error) { wantStale(t, err, "acct:newer", 10, 20) }},
		{"Claim on a pgx.Tx wrapped in the caller's own Querier", func(tx pgx.Tx) error { return sqlfence.Claim(ctx, querierOf{tx}, "refused", 10) }, stale},
		{"guarded Table.Update on a pgx.Tx wrapped in the caller's own Querier", func(tx pgx.Tx) error {
			return guarded.Update(ctx, querierOf{tx}, "a", 10, "A")
		}, stale},
		{"InTx on a pgx.Tx wrapped in the caller's own TxBeginner", func(tx pgx.Tx) error {
			return sqlfence.InTx(ctx, querierOf{tx}, "refused", 10, func(tx pgx.Tx) error { return write(tx, "A in fn") })
		}, stale},
		{"guarded Table.Update on a conn in a BEGIN", func(pgx.Tx) error { return guarded.Update(ctx, conn, "a", 10, "A") }, stale},
		// a refusal in fn, which InTx's savepoint rollback would clear
		{"Exec in InTx's fn on a pgx.Tx, returned", func(tx pgx.Tx) error {
			return sqlfence.InTx(ctx, tx, "other", 10, execStale)
		}, stale},
		{"Claim in InTx's fn on a pgx.Tx, ignored", func(tx pgx.Tx) error {
			return sqlfence.InTx(ctx, tx, "other", 10, func(tx pgx.Tx) error {
				_ = sqlfence.Claim(ctx, tx, "refused", 10)
				_ = write(tx, "A in fn")
				return nil
			})
		}, func(t *testing.T, err error) {
			if !errors.Is(err, pgx.ErrTxCommitRollback) || !strings.Contains(err.Error(), "fn ignored a failed statement") {
				t.Fatalf("InTx whose fn ignored a refusal = %v; want pgx.ErrTxCommitRollback saying so", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := write(env.Pool, "B"); err != nil { // the newer holder's
				t.Fatal(err)
			}
			begin := env.Pool.Begin
			if strings.Contains(c.name, "conn") {
				begin = conn.Begin
			}
			tx, err := begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			_ = write(tx, "A early") // the old holder's write before the fenced call
			c.want(t, c.call(tx))
			_ = write(tx, "A late") // the error ignored, as careless code does
			if err := tx.Commit(ctx); err == nil {
				t.Errorf("COMMIT after a refused %s succeeded; want it to fail", c.name)
			}
			if got := readData(t, env.Pool, "doc"); got != "B" {
				t.Errorf("row = %q after the old holder's commit, want B's write", got)
			}
		})
	}
}

// TestInTxConnInTransaction: InTx on a *pgx.Conn or *pgxpool.Conn on which
// the caller began a transaction must refuse, sending nothing, rather than
// claim inside the caller's transaction and commit it: the caller's later
// ROLLBACK would then undo nothing.
func TestInTxConnInTransaction(t *testing.T) {
	env, ctx, _ := docTable(t)
	pc, err := env.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	for name, db := range map[string]interface {
		sqlfence.TxBeginner
		execer
	}{"conn": connect(t, env.URL), "pool conn": pc} {
		t.Run(name, func(t *testing.T) {
			exec(t, db, "BEGIN", `INSERT INTO data (k, v) VALUES ('`+name+`', 'uncommitted')`)
			err := sqlfence.InTx(ctx, db, "conn-in-tx", 1, func(pgx.Tx) error { return nil })
			exec(t, db, "ROLLBACK")
			if !errors.Is(err, fence.ErrInvalid) {
				t.Errorf("InTx on a %s inside a transaction: %v, want an error matching fence.ErrInvalid", name, err)
			}
			if got := readData(t, env.Pool, name); got != "<none>" {
				t.Errorf("the caller's rolled-back insert reads %q: InTx committed the caller's transaction", got)
			}
		})
	}
}

// TestInTxSavepointsInFn: fn's own savepoints (tx.Begin) keep working, committed
// or rolled back, and InTx commits.
func TestInTxSavepointsInFn(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	err := sqlfence.InTx(ctx, env.Pool, "doc", 1, func(tx pgx.Tx) error {
		for _, v := range []string{"kept", "undone"} {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			if _, err := sp.Exec(ctx, `INSERT INTO data (k, v) VALUES ($1, $1)`, v); err != nil {
				return err
			}
			if v == "undone" {
				err = sp.Rollback(ctx)
			} else {
				err = sp.Commit(ctx)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if readData(t, env.Pool, "kept") != "kept" || readData(t, env.Pool, "undone") != "<none>" {
		t.Fatal("savepoints inside fn did not keep and undo their writes")
	}
}

// TestInTxFnIgnoresFailedStatement: fn returns nil after a statement failed
// (the transaction is aborted): InTx rolls back and returns
// pgx.ErrTxCommitRollback, and the connection stays open for the next call.
func TestInTxFnIgnoresFailedStatement(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	conn := connect(t, env.URL)
	err := sqlfence.InTx(ctx, conn, "doc", 1, func(tx pgx.Tx) error {
		_, _ = tx.Exec(ctx, `SELECT 1/0`)
		return nil
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("InTx after a failed statement fn ignored: %v, want pgx.ErrTxCommitRollback", err)
	}
	if conn.IsClosed() {
		t.Fatal("InTx closed the connection")
	}
	if err := sqlfence.InTx(ctx, conn, "doc", 1, func(pgx.Tx) error { return nil }); err != nil {
		t.Fatalf("next InTx on the connection: %v", err)
	}
}

// querierOf is a caller's own Querier and TxBeginner around a pgx.Tx (a
// tracing or repository wrapper): sqlfence cannot tell it is in a
// transaction.
type querierOf struct{ q pgx.Tx }

func (w querierOf) Begin(ctx context.Context) (pgx.Tx, error) { return w.q.Begin(ctx) }

func (w querierOf) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return w.q.Exec(ctx, sql, args...)
}

func (w querierOf) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return w.q.QueryRow(ctx, sql, args...)
}

// cancelOnEnd is a pgx tracer that, once armed, cancels a context when
// the next statement ends.
type cancelOnEnd struct {
	cancel atomic.Pointer[context.CancelFunc]
}

func (c *cancelOnEnd) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (c *cancelOnEnd) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {
	if f := c.cancel.Swap(nil); f != nil {
		(*f)()
	}
}

// earlyWriteTraced connects with a cancelOnEnd tracer, begins a
// transaction and writes row a ("A early") in it: the old holder's write
// before its fenced call.
func earlyWriteTraced(t *testing.T, env *testenv.PostgresEnv, ctx context.Context) (*cancelOnEnd, *pgx.Conn, pgx.Tx) {
	t.Helper()
	cfg, err := pgx.ParseConfig(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	tracer := &cancelOnEnd{}
	cfg.Tracer = tracer
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	exec(t, tx, `INSERT INTO data VALUES ('a', 'A early')`)
	return tracer, conn, tx
}

// TestClaimRefusedAfterWaitCtxEndedFailsCommit: a Claim on a pgx.Tx that
// waited on a newer holder's uncommitted claim is refused once it commits,
// and reads the current token in a second statement. When ctx ends between
// the two (a lease's Context ends when a newer holder took over), the
// refusal must still make the caller's transaction fail: otherwise Claim
// returns ctx's error, and careless code commits its writes after the
// newer holder's.
func TestClaimRefusedAfterWaitCtxEndedFailsCommit(t *testing.T) {
	env, ctx, _ := docTable(t)
	if err := sqlfence.Claim(ctx, env.Pool, "race", 5); err != nil {
		t.Fatal(err)
	}
	tracer, conn, tx := earlyWriteTraced(t, env, ctx)
	newer, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Rollback(ctx)
	if err := sqlfence.Claim(ctx, newer, "race", 20); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	tracer.cancel.Store(&cancel) // ends actx once the claim statement ends
	done := make(chan error, 1)
	go func() { done <- sqlfence.Claim(actx, tx, "race", 10) }()
	waitForLockWait(t, env.Pool, conn.PgConn().PID())
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	claimErr := <-done
	_, _ = tx.Exec(ctx, `INSERT INTO data VALUES ('b', 'A late')`) // the error ignored, as careless code does
	wantRefusedCtxEnded(t, env, tx, "a Claim", claimErr, "race")
}

// wantRefusedCtxEnded checks that what, refused on resource (token 10
// after 20) as its ctx ended, returned a stale error wrapping
// context.Canceled and left tx unable to commit its row a.
func wantRefusedCtxEnded(t *testing.T, env *testenv.PostgresEnv, tx pgx.Tx, what string, err error, resource string) {
	t.Helper()
	if cerr := tx.Commit(context.Background()); cerr == nil {
		t.Errorf("COMMIT after %s refused as its ctx ended (%v) succeeded; want it to fail", what, err)
	}
	if got := readData(t, env.Pool, "a"); got != "<none>" {
		t.Errorf("row a = %q after the old holder's commit; want none", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%s = %v; want it to wrap context.Canceled", what, err)
	}
	wantStale(t, err, resource, 10, 20)
}

// TestTableRefusedCtxEndedFailsCommit: a guarded Table write refused in
// the caller's pgx.Tx reads why in a second statement; when ctx ends
// between the two, the refusal must still make the transaction fail.
func TestTableRefusedCtxEndedFailsCommit(t *testing.T) {
	env, ctx, _ := docTable(t)
	exec(t, env.Pool, `CREATE TABLE acct (id text PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, v text)`,
		`INSERT INTO acct VALUES ('a', 0, 'none')`)
	accounts, err := sqlfence.NewTable("acct", "id", "lock_version", "v")
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlfence.Claim(ctx, env.Pool, "refused", 20); err != nil {
		t.Fatal(err)
	}
	tracer, _, tx := earlyWriteTraced(t, env, ctx)
	actx, cancel := context.WithCancel(ctx)
	tracer.cancel.Store(&cancel) // ends actx once the write ends
	writeErr := accounts.WithGuard("refused").Update(actx, tx, "a", 10, "A")
	wantRefusedCtxEnded(t, env, tx, "a guarded Update", writeErr, "refused")
}

// TestInTxOnTxClaimErrorFailsCommit: in a REPEATABLE READ transaction
// whose snapshot predates a newer holder's claim, InTx's claim on the
// caller's pgx.Tx fails with a serialization error (40001) instead of a
// refusal. Claim and Exec on the pgx.Tx leave the transaction aborted by
// that error; InTx's savepoint rollback cleared it, so careless code
// committed its writes after the newer holder's. InTx must leave it
// failed, as Claim does.
func TestInTxOnTxClaimErrorFailsCommit(t *testing.T) {
	env, ctx, _ := docTable(t)
	if err := sqlfence.Claim(ctx, env.Pool, "r", 5); err != nil {
		t.Fatal(err)
	}
	tx, err := env.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	exec(t, tx, `INSERT INTO data VALUES ('a', 'A early')`)        // takes the snapshot
	if err := sqlfence.Claim(ctx, env.Pool, "r", 20); err != nil { // the newer holder
		t.Fatal(err)
	}
	err = sqlfence.InTx(ctx, tx, "r", 10, func(pgx.Tx) error { return nil })
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("InTx = %v; want a serialization failure (40001)", err)
	}
	_, _ = tx.Exec(ctx, `INSERT INTO data VALUES ('b', 'A late')`) // the error ignored, as careless code does
	if err := tx.Commit(ctx); err == nil {
		t.Errorf("COMMIT after InTx's claim failed on the pgx.Tx succeeded; want it to fail")
	}
	if got := readData(t, env.Pool, "a"); got != "<none>" {
		t.Errorf("row a = %q after the old holder's commit; want none", got)
	}
}

// TestNoRowKeepsTransaction: ErrNoRow, unlike a refusal, leaves the
// caller's transaction usable (ErrNoRow's documentation): its earlier
// write commits, and so does a guarded table's claim (WithGuard's).
func TestNoRowKeepsTransaction(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, v int)`, `CREATE TABLE side (x int)`)
	acc, err := sqlfence.NewTable("acct", "id", "lock_version", "v")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	exec(t, tx, `INSERT INTO side VALUES (1)`)
	var v int
	for name, err := range map[string]error{
		"Update":         acc.Update(ctx, tx, 1, 5, 0),
		"Claim":          acc.Claim(ctx, tx, 1, 5, &v),
		"guarded Update": acc.WithGuard("g").Update(ctx, tx, 1, 7, 0),
	} {
		if !errors.Is(err, sqlfence.ErrNoRow) {
			t.Fatalf("%s of a missing row: %v, want ErrNoRow", name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit after ErrNoRow: %v; want nil (the transaction stays usable)", err)
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM side`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d rows of the write before ErrNoRow (%v), want 1", n, err)
	}
	if g, err := current(ctx, env.Pool, "g"); err != nil || g != 7 {
		t.Errorf("guard token %d (%v) after the commit, want 7 (the claim commits with the transaction)", g, err)
	}
}

// TestSavepointReleaseAfterRefusal: after a refusal inside a savepoint,
// releasing it (sp.Commit) fails with 25P02, as docs/postgres.md says,
// and the caller's Commit returns pgx.ErrTxCommitRollback.
func TestSavepointReleaseAfterRefusal(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	if err := sqlfence.Claim(ctx, env.Pool, "r", 10); err != nil {
		t.Fatal(err)
	}
	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStale(t, sqlfence.Claim(ctx, sp, "r", 5), "r", 5, 10)
	var pgErr *pgconn.PgError
	if err := sp.Commit(ctx); !errors.As(err, &pgErr) || pgErr.Code != "25P02" {
		t.Errorf("releasing the savepoint after a refusal: %v; want SQLSTATE 25P02", err)
	}
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Errorf("Commit after a refusal: %v; want pgx.ErrTxCommitRollback", err)
	}
}
