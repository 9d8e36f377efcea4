package sqlfence_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// waitForLockWait polls until backend pid waits on a lock (a row lock here),
// failing the test if it does not within a generous bound. It observes the
// server's state; it asserts nothing about speed.
func waitForLockWait(t *testing.T, env interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, pid uint32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		var wait string
		err := env.QueryRow(testCtx(t),
			`SELECT coalesce(wait_event_type, '') FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&wait)
		if err != nil {
			t.Fatal(err)
		}
		if wait == "Lock" {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("backend %d never waited on a lock", pid)
}

// holder runs InTx on its own connection; fn writes, reports it has
// claimed, then blocks until release is closed, then writes again.
type holder struct {
	conn    *pgx.Conn
	claimed chan struct{}
	release chan struct{}
	done    chan error
}

func startHolder(t *testing.T, url string, resource string, tok fence.Token, block bool) *holder {
	h := &holder{conn: connect(t, url), claimed: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	ctx := testCtx(t)
	go func() {
		h.done <- sqlfence.InTx(ctx, h.conn, resource, tok, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO log (tok, step) VALUES ($1, 'first')`, int64(tok)); err != nil {
				return err
			}
			close(h.claimed)
			if block {
				<-h.release
			}
			_, err := tx.Exec(ctx, `INSERT INTO log (tok, step) VALUES ($1, 'second')`, int64(tok))
			return err
		})
	}()
	return h
}

func (h *holder) isDone() bool {
	select {
	case err := <-h.done:
		h.done <- err
		return true
	default:
		return false
	}
}

func logRows(t *testing.T, q sqlfence.Querier) []string {
	t.Helper()
	var out []string
	var s string
	rows, err := q.(interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}).Query(testCtx(t), `SELECT tok || ':' || step FROM log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pgx.ForEachRow(rows, []any{&s}, func() error { out = append(out, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// olderHoldsNewerWaits starts holder a (token 10), which claims "r" and
// then blocks until a.release is closed, and holder b (token 11), and
// returns once b's claim is waiting on the guard row's lock.
func olderHoldsNewerWaits(t *testing.T, url string, pool *pgxpool.Pool) (a, b *holder) {
	a = startHolder(t, url, "r", 10, true)
	<-a.claimed
	b = startHolder(t, url, "r", 11, false)
	waitForLockWait(t, pool, b.conn.PgConn().PID())
	if b.isDone() {
		t.Fatal("newer holder finished while the older transaction was open")
	}
	return a, b
}

// An open older transaction makes a newer holder's claim wait on the guard
// row's lock; the older one commits first and the two never interleave.
func TestNewerWaitsForOlder(t *testing.T) {
	env := setup(t)
	exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
	a, b := olderHoldsNewerWaits(t, env.URL, env.Pool)
	close(a.release)
	if err := <-a.done; err != nil {
		t.Fatalf("older holder: %v", err)
	}
	if err := <-b.done; err != nil {
		t.Fatalf("newer holder: %v", err)
	}
	want := []string{"10:first", "10:second", "11:first", "11:second"}
	if got := logRows(t, env.Pool); !slices.Equal(got, want) {
		t.Fatalf("log = %v, want %v", got, want)
	}
}

// An older holder arriving while a newer one's transaction is open waits,
// then fails with the token the newer one committed, although that token
// was committed after the older claim's statement took its snapshot.
func TestOlderWaitsThenStale(t *testing.T) {
	for _, existing := range []bool{true, false} {
		name := map[bool]string{true: "row existed", false: "row inserted meanwhile"}[existing]
		t.Run(name, func(t *testing.T) {
			env := setup(t)
			ctx := testCtx(t)
			exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
			if existing {
				if err := sqlfence.Claim(ctx, env.Pool, "r", 5); err != nil {
					t.Fatal(err)
				}
			}
			b := startHolder(t, env.URL, "r", 11, true)
			<-b.claimed
			a := startHolder(t, env.URL, "r", 10, false)
			waitForLockWait(t, env.Pool, a.conn.PgConn().PID())
			close(b.release)
			if err := <-b.done; err != nil {
				t.Fatalf("newer holder: %v", err)
			}
			wantStale(t, <-a.done, "r", 10, 11)
			want := []string{"11:first", "11:second"}
			if got := logRows(t, env.Pool); !slices.Equal(got, want) {
				t.Fatalf("log = %v, want %v", got, want)
			}
		})
	}
}

// A holder paused between claim and commit whose backend is killed leaves
// nothing behind, and the newer holder that waited on its lock proceeds.
func TestPausedHolderKilled(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
	a, b := olderHoldsNewerWaits(t, env.URL, env.Pool)
	var killed bool
	if err := env.Pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(a.conn.PgConn().PID())).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend: %v, %v", killed, err)
	}
	if err := <-b.done; err != nil {
		t.Fatalf("newer holder after the old backend died: %v", err)
	}
	close(a.release) // the paused holder resumes and tries to write
	if err := <-a.done; err == nil {
		t.Fatal("killed holder's InTx returned nil")
	}
	want := []string{"11:first", "11:second"}
	if got := logRows(t, env.Pool); !slices.Equal(got, want) {
		t.Fatalf("log = %v, want %v (nothing of the killed holder)", got, want)
	}
	if cur, err := current(ctx, env.Pool, "r"); err != nil || cur != 11 {
		t.Fatalf("Current = %d, %v; want 11", cur, err)
	}
	// The killed holder's token is stale from now on.
	wantStale(t, sqlfence.Claim(ctx, env.Pool, "r", 10), "r", 10, 11)
}

// Row mode has the same race: an update that waited on a row lock while a
// newer version was committed reports that version, not its snapshot's.
func TestRowUpdateWaitsThenStale(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO acct (id, balance, lock_version) VALUES (1, 0, 5)`)
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := tbl.Update(ctx, tx, 1, 11, 110); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, env.URL)
	done := make(chan error, 1)
	go func() { done <- tbl.Update(ctx, conn, 1, 10, 100) }()
	waitForLockWait(t, env.Pool, conn.PgConn().PID())
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wantStale(t, <-done, "acct:1", 10, 11)
	var bal int
	if err := env.Pool.QueryRow(ctx, `SELECT balance FROM acct WHERE id = 1`).Scan(&bal); err != nil || bal != 110 {
		t.Fatalf("balance = %d, %v; want 110", bal, err)
	}

	// And a row deleted while the update waited is missing, not stale.
	tx, err = env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, tx, `DELETE FROM acct WHERE id = 1`)
	go func() { done <- tbl.Update(ctx, conn, 1, 12, 120) }()
	waitForLockWait(t, env.Pool, conn.PgConn().PID())
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("update of a row deleted meanwhile: %v, want ErrNoRow", err)
	}

	// Upsert: a row inserted with a newer version while the upsert waited.
	tx, err = env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(ctx, tx, 1, 20, 200); err != nil {
		t.Fatal(err)
	}
	go func() { done <- tbl.Upsert(ctx, conn, 1, 15, 150) }()
	waitForLockWait(t, env.Pool, conn.PgConn().PID())
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wantStale(t, <-done, "acct:1", 15, 20)
}

// An Insert that waited on a concurrent insert of the same key (its
// snapshot cannot see that row) reports stale when the other insert
// committed a newer version, and ErrRowExists when it committed an older
// or equal one, as it does without the race.
func TestRowInsertWaitsThenStale(t *testing.T) {
	env, tbl := acctTable(t)
	ctx := testCtx(t)
	conn := connect(t, env.URL)
	for _, c := range []struct {
		key   int
		other fence.Token // version the concurrent insert commits
		stale bool
	}{{1, 20, true}, {2, 15, false}, {3, 10, false}} {
		tx, err := env.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Insert(ctx, tx, c.key, c.other, 1); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- tbl.Insert(ctx, conn, c.key, 15, 2) }()
		waitForLockWait(t, env.Pool, conn.PgConn().PID())
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		err = <-done
		if c.stale {
			wantStale(t, err, "acct:"+strconv.Itoa(c.key), 15, c.other)
		} else if !errors.Is(err, sqlfence.ErrRowExists) {
			t.Fatalf("key %d: insert of 15 after a concurrent insert of %d: %v, want ErrRowExists", c.key, c.other, err)
		}
		if v, err := lockVersion(ctx, env.Pool, "acct", c.key); err != nil || v != c.other {
			t.Fatalf("key %d: version %d, %v; want %d (the losing insert changed nothing)", c.key, v, err, c.other)
		}
	}
}
