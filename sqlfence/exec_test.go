package sqlfence_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

// flights counts a connection's round trips: the times the client writes
// after it has read (or first), so that pipelined messages count once.
type flights struct {
	n       atomic.Int64
	writing atomic.Bool
}

type flightConn struct {
	net.Conn
	f *flights
}

func (c flightConn) Write(b []byte) (int, error) {
	if !c.f.writing.Swap(true) {
		c.f.n.Add(1)
	}
	return c.Conn.Write(b)
}

func (c flightConn) Read(b []byte) (int, error) {
	c.f.writing.Store(false)
	return c.Conn.Read(b)
}

// flightPool opens a one-connection pool on url whose round trips are
// counted, built as users build one (pgxpool with defaults).
func flightPool(tb testing.TB, url string) (*pgxpool.Pool, *flights) {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	f := &flights{}
	d := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return flightConn{Conn: c, f: f}, nil
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(testCtx(tb), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool, f
}

// TestExecOneRoundTrip: a fenced single statement on a pool costs one
// round trip, a plain transaction of the same statement three.
func TestExecOneRoundTrip(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE jobs (id bigint PRIMARY KEY, state text NOT NULL)`, `INSERT INTO jobs VALUES (1, 'new')`)
	pool, f := flightPool(t, env.URL)
	const upd = `UPDATE jobs SET state = $2 WHERE id = $1`
	count := func(do func() error) int64 {
		t.Helper()
		do() // warm the connection and its statement cache
		before := f.n.Load()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		return f.n.Load() - before
	}
	fenced := count(func() error { _, err := sqlfence.Exec(ctx, pool, "job/1", 5, upd, 1, "done"); return err })
	plain := count(func() error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, upd, 1, "done"); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	t.Logf("round trips: Exec %d, plain transaction %d", fenced, plain)
	if fenced != 1 || plain != 3 {
		t.Fatalf("Exec took %d round trips, a plain transaction %d; want 1 and 3", fenced, plain)
	}
}

// TestExecRefusedRunsNothing: a stale Exec returns the current token and
// leaves the data as it was; a failing statement leaves the claim undone.
func TestExecRefusedRunsNothing(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	for _, db := range jobsDBs(t, env, true) {
		t.Run(db.name, func(t *testing.T) {
			res := "job/" + db.name
			if err := sqlfence.Claim(ctx, env.Pool, res, 20); err != nil {
				t.Fatal(err)
			}
			_, err := sqlfence.Exec(ctx, db.db, res, 10, `UPDATE jobs SET state = 'stale' WHERE id = 1`)
			var stale *fence.StaleError
			if !errors.As(err, &stale) || stale.Current != 20 || stale.Presented != 10 {
				t.Fatalf("Exec with token 10 after 20 = %v; want a StaleError with current 20", err)
			}
			wantState(t, env.Pool, "new")

			// A statement that fails undoes the claim that travelled with it.
			if _, err := sqlfence.Exec(ctx, db.db, res, 30, `UPDATE jobs SET state = 'x' WHERE id = 1/0`); err == nil {
				t.Fatal("a statement dividing by zero succeeded")
			}
			if cur, err := current(ctx, env.Pool, res); err != nil || cur != 20 {
				t.Fatalf("guard token after a failed statement = %d, %v; want 20 (the claim undone)", cur, err)
			}
			tag, err := sqlfence.Exec(ctx, db.db, res, 30, `UPDATE jobs SET state = $1 WHERE id = 1`, "done by "+db.name)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("Exec with token 30: %v, %v", tag, err)
			}
			wantState(t, env.Pool, "done by "+db.name)
			exec(t, env.Pool, `UPDATE jobs SET state = 'new'`)
		})
	}
}

// namedDB is a handle Exec runs on, named for subtests.
type namedDB struct {
	name string
	db   sqlfence.TxBeginner
}

// jobsDBs creates the table jobs with row 1 in state 'new' and returns the
// handles Exec is tested on: env's pool (prepared statements), a
// connection when conn is true, and pools sending text (exec mode) and the
// simple protocol.
func jobsDBs(t *testing.T, env *testenv.PostgresEnv, conn bool) []namedDB {
	t.Helper()
	exec(t, env.Pool, `CREATE TABLE jobs (id bigint PRIMARY KEY, state text NOT NULL)`, `INSERT INTO jobs VALUES (1, 'new')`)
	dbs := []namedDB{{"pool", env.Pool}}
	if conn {
		dbs = append(dbs, namedDB{"conn", connect(t, env.URL)})
	}
	return append(dbs, namedDB{"exec-mode", newPool(t, env.URL+"&default_query_exec_mode=exec")},
		namedDB{"simple-protocol", newPool(t, env.URL+"&default_query_exec_mode=simple_protocol")})
}

// newPool is pgxpool.New on url, closed at cleanup.
func newPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func wantState(t *testing.T, db *pgxpool.Pool, want string) {
	t.Helper()
	var got string
	if err := db.QueryRow(testCtx(t), `SELECT state FROM jobs WHERE id = 1`).Scan(&got); err != nil || got != want {
		t.Fatalf("jobs.state = %q, %v; want %q", got, err, want)
	}
}

// TestExecInTx: on a pgx.Tx the claim and the statement commit with the
// caller's transaction.
func TestExecInTx(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE jobs (id bigint PRIMARY KEY, state text NOT NULL)`, `INSERT INTO jobs VALUES (1, 'new')`)
	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlfence.Exec(ctx, tx, "job", 7, `UPDATE jobs SET state = 'in tx' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wantState(t, env.Pool, "new")
	if cur, err := current(ctx, env.Pool, "job"); err != nil || cur != 0 {
		t.Fatalf("guard token after a rollback = %d, %v; want 0", cur, err)
	}
	// a refusal aborts the caller's transaction, as Claim's does
	if err := sqlfence.Claim(ctx, env.Pool, "job", 9); err != nil {
		t.Fatal(err)
	}
	tx, err = env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	_, err = sqlfence.Exec(ctx, tx, "job", 7, `UPDATE jobs SET state = 'stale' WHERE id = 1`)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 9 {
		t.Fatalf("Exec with token 7 after 9 on a pgx.Tx = %v; want a *fence.StaleError with Current 9", err)
	}
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("COMMIT after a refused Exec: %v; want pgx.ErrTxCommitRollback", err)
	}
	wantState(t, env.Pool, "new")
}

// TestExecRacingWriters: writers with random tokens append to a log
// through Exec; the accepted entries, in the order they committed, never
// go back to an older token.
func TestExecRacingWriters(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE wlog (seq bigserial PRIMARY KEY, token bigint NOT NULL)`)
	var wg sync.WaitGroup
	var accepted, refused atomic.Int64
	for w := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 20 {
				tok := fence.Token(1 + rng.IntN(200))
				_, err := sqlfence.Exec(ctx, env.Pool, "wlog", tok, `INSERT INTO wlog (token) VALUES ($1)`, int64(tok))
				switch {
				case err == nil:
					accepted.Add(1)
				case errors.Is(err, fence.ErrStale):
					refused.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows, err := env.Pool.Query(ctx, `SELECT token FROM wlog ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(toks); i++ {
		if toks[i] < toks[i-1] {
			t.Fatalf("entry %d has token %d after %d: an older token was accepted after a newer one", i, toks[i], toks[i-1])
		}
	}
	if int64(len(toks)) != accepted.Load() {
		t.Fatalf("%d entries, %d accepted", len(toks), accepted.Load())
	}
	t.Logf("%d accepted, %d refused", accepted.Load(), refused.Load())
}

// TestExecStatementThatCommits: a statement that commits part way (a
// procedure or DO block with COMMIT, or COMMIT between the statements of a
// simple-protocol query) makes Exec fail, and what it ran after the
// COMMIT, outside the claim, is rolled back.
func TestExecStatementThatCommits(t *testing.T) {
	env, dbs, log := endTxSetup(t)
	ctx := testCtx(t)
	for i, tc := range []struct {
		name string
		db   sqlfence.TxBeginner
		sql  string
	}{
		{"CALL", dbs["pool"], `CALL twostep()`},
		{"DO", connect(t, env.URL), `DO $$ BEGIN UPDATE steps SET log = log || 'a;' WHERE id = 1; COMMIT; UPDATE steps SET log = log || 'b;' WHERE id = 1; END $$`},
		{"simple protocol", dbs["simple-protocol"], `UPDATE steps SET log = log || 'a;' WHERE id = 1; COMMIT; UPDATE steps SET log = log || 'b;' WHERE id = 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqlfence.Exec(ctx, tc.db, "steps", fence.Token(10+i), tc.sql)
			if err == nil || !strings.Contains(err.Error(), "ended the transaction") {
				t.Fatalf("Exec of a statement that commits = %v; want an error saying it ended the transaction", err)
			}
			if got := log(); strings.Contains(got, "b") {
				t.Fatalf("steps.log = %q: the work after the COMMIT, outside the claim, stayed", got)
			}
		})
	}
}

// TestExecSameTokenWritesNoRowVersion: Exec with the token the guard row
// already holds (a holder writing again) locks the row and writes no new
// version of it, prepared or sent as text; a newer token moves it.
func TestExecSameTokenWritesNoRowVersion(t *testing.T) {
	env, ctx := setup(t), testCtx(t)
	for _, db := range jobsDBs(t, env, false) {
		t.Run(db.name, func(t *testing.T) {
			res := "same/" + db.name
			if _, err := sqlfence.Exec(ctx, db.db, res, 5, `UPDATE jobs SET state = 'first' WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			ctid, updated := guardRow(t, env.Pool, res)
			for i := range 3 {
				if _, err := sqlfence.Exec(ctx, db.db, res, 5, `UPDATE jobs SET state = $1 WHERE id = 1`, "again "+db.name); err != nil {
					t.Fatalf("write %d with the same token: %v", i+2, err)
				}
			}
			wantState(t, env.Pool, "again "+db.name)
			if c, u := guardRow(t, env.Pool, res); c != ctid || !u.Equal(updated) {
				t.Fatalf("after 3 writes with the same token the guard row is at %s, updated %v; want %s, %v (no new row version)", c, u, ctid, updated)
			}
			if _, err := sqlfence.Exec(ctx, db.db, res, 6, `UPDATE jobs SET state = 'newer' WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			if cur, err := current(ctx, env.Pool, res); err != nil || cur != 6 {
				t.Fatalf("Current = %d, %v; want 6", cur, err)
			}
		})
	}
}

// TestExecSameTokenWaitsForNewerThenStale: Exec presenting the token the
// guard row holds while a newer holder's claim of the row is open waits on
// the row lock, then is refused with the newer token, and its statement
// never runs (the row lock's re-check under READ COMMITTED).
func TestExecSameTokenWaitsForNewerThenStale(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
	for _, mode := range []string{"cache_statement", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			exec(t, env.Pool, `DELETE FROM log`)
			res := "r-" + mode
			if err := sqlfence.Claim(ctx, env.Pool, res, 10); err != nil {
				t.Fatal(err)
			}
			conn := connect(t, env.URL+"&default_query_exec_mode="+mode)
			// Warm the connection (its statement cache): the fast path.
			if _, err := sqlfence.Exec(ctx, conn, res, 10, `SELECT 1`); err != nil {
				t.Fatal(err)
			}
			b := startHolder(t, env.URL, res, 11, true)
			<-b.claimed
			done := make(chan error, 1)
			pid := conn.PgConn().PID()
			go func() {
				_, err := sqlfence.Exec(ctx, conn, res, 10, `INSERT INTO log (tok, step) VALUES (10, 'exec')`)
				done <- err
			}()
			testenv.Poll(t, 30*time.Second, "Exec with token 10 waiting on the guard row", func() bool {
				select {
				case err := <-done:
					t.Fatalf("Exec with token 10 finished while token 11's claim was open: %v", err)
				default:
				}
				var wait string
				if err := env.Pool.QueryRow(ctx, `SELECT coalesce(wait_event_type, '') FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&wait); err != nil {
					t.Fatal(err)
				}
				return wait == "Lock"
			})
			close(b.release)
			if err := <-b.done; err != nil {
				t.Fatalf("newer holder: %v", err)
			}
			wantStale(t, <-done, res, 10, 11)
			if got, want := logRows(t, env.Pool), []string{"11:first", "11:second"}; !slices.Equal(got, want) {
				t.Fatalf("log = %v, want %v", got, want)
			}
		})
	}
}
