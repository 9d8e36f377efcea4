package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/sqlfence"
)

// writeData returns an InTx function that upserts value into data(k, v).
func writeData(k, v string, called *int) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		*called++
		_, err := tx.Exec(context.Background(),
			`INSERT INTO data (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v`, k, v)
		return err
	}
}

func readData(t *testing.T, db sqlfence.Querier, k string) string {
	t.Helper()
	var v string
	err := db.QueryRow(testCtx(t), `SELECT v FROM data WHERE k = $1`, k).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantStale(t *testing.T, err error, resource string, presented, current fence.Token) {
	t.Helper()
	var se *fence.StaleError
	if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("err = %v, want *fence.StaleError", err)
	}
	if se.Resource != resource || se.Presented != presented || se.Current != current {
		t.Fatalf("stale error = %+v, want {%s %d %d}", *se, resource, presented, current)
	}
}

func TestInTxStaleEqualNewer(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	var calls int

	steps := []struct {
		tok       fence.Token
		v         string
		staleCur  fence.Token // 0: accepted
		wantValue string
	}{
		{10, "ten", 0, "ten"},
		{9, "nine", 10, "ten"},            // older: rejected
		{10, "ten again", 0, "ten again"}, // equal: same holder
		{11, "eleven", 0, "eleven"},       // newer
		{10, "ten late", 11, "eleven"},
		{1, "one", 11, "eleven"},
	}
	for _, s := range steps {
		before := calls
		err := sqlfence.InTx(ctx, env.Pool, "doc", s.tok, writeData("doc", s.v, &calls))
		if s.staleCur != 0 {
			wantStale(t, err, "doc", s.tok, s.staleCur)
			if calls != before {
				t.Fatalf("token %d: fn ran although stale", s.tok)
			}
		} else if err != nil {
			t.Fatalf("token %d: %v", s.tok, err)
		}
		if got := readData(t, env.Pool, "doc"); got != s.wantValue {
			t.Fatalf("after token %d: data = %q, want %q", s.tok, got, s.wantValue)
		}
	}
	if cur, err := current(ctx, env.Pool, "doc"); err != nil || cur != 11 {
		t.Fatalf("Current = %d, %v; want 11", cur, err)
	}
	if cur, err := current(ctx, env.Pool, "never"); err != nil || cur != 0 {
		t.Fatalf("Current(never) = %d, %v; want 0", cur, err)
	}
}

// A transaction whose fn fails leaves nothing: neither its writes nor its
// claim.
func TestInTxFnErrorRollsBackClaim(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	var calls int
	if err := sqlfence.InTx(ctx, env.Pool, "doc", 5, writeData("doc", "five", &calls)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := sqlfence.InTx(ctx, env.Pool, "doc", 7, func(tx pgx.Tx) error {
		if err := writeData("doc", "seven", &calls)(tx); err != nil {
			return err
		}
		exec(t, tx, `INSERT INTO data (k, v) VALUES ('other', 'x')`)
		return boom
	})
	if !errors.Is(err, boom) || err.Error() != `sqlfence: InTx("doc") with token 7: boom` {
		t.Fatalf("err = %v, want fn's error wrapped once with the resource and token", err)
	}
	if got := readData(t, env.Pool, "doc"); got != "five" {
		t.Fatalf("data = %q after failed tx, want five", got)
	}
	if got := readData(t, env.Pool, "other"); got != "<none>" {
		t.Fatalf("failed tx's second write visible: %q", got)
	}
	if cur, _ := current(ctx, env.Pool, "doc"); cur != 5 {
		t.Fatalf("failed tx's claim visible: token %d, want 5", cur)
	}
	// Token 6 < 7 is still accepted: the failed claim of 7 never happened.
	if err := sqlfence.InTx(ctx, env.Pool, "doc", 6, writeData("doc", "six", &calls)); err != nil {
		t.Fatalf("token 6 after rolled-back claim of 7: %v", err)
	}
}

// InTx works on a pool, a connection and a caller's transaction; on a
// transaction the claim is a savepoint that the caller's rollback undoes.
func TestInTxHandles(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	conn := connect(t, env.URL)
	var calls int
	if err := sqlfence.InTx(ctx, conn, "r", 3, writeData("r", "conn", &calls)); err != nil {
		t.Fatalf("on *pgx.Conn: %v", err)
	}
	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := sqlfence.InTx(ctx, tx, "r", 4, writeData("r", "tx", &calls)); err != nil {
		t.Fatalf("on pgx.Tx: %v", err)
	}
	if got := readData(t, tx, "r"); got != "tx" {
		t.Fatalf("inside outer tx: %q, want tx", got)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readData(t, env.Pool, "r"); got != "conn" {
		t.Fatalf("after outer rollback: %q, want conn", got)
	}
	if cur, _ := current(ctx, env.Pool, "r"); cur != 3 {
		t.Fatalf("after outer rollback: token %d, want 3", cur)
	}
}

// Claim on a pgx.Tx fences a transaction the caller manages; on a pool it
// claims in its own statement, so an older holder is shut out before the new one writes.
func TestClaimInTxAndAlone(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)

	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlfence.Claim(ctx, tx, "job", 20); err != nil {
		t.Fatal(err)
	}
	exec(t, tx, `INSERT INTO data VALUES ('job', 'by 20')`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// A new holder with token 21 fences right after acquiring its lease.
	if err := sqlfence.Claim(ctx, env.Pool, "job", 21); err != nil {
		t.Fatal(err)
	}
	// The old holder (20) has not noticed and writes: refused, although
	// the new holder has written nothing yet.
	var calls int
	err = sqlfence.InTx(ctx, env.Pool, "job", 20, writeData("job", "late 20", &calls))
	wantStale(t, err, "job", 20, 21)
	tx, err = env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStale(t, sqlfence.Claim(ctx, tx, "job", 19), "job", 19, 21)
	_ = tx.Rollback(ctx)
	wantStale(t, sqlfence.Claim(ctx, env.Pool, "job", 1), "job", 1, 21)
	if got := readData(t, env.Pool, "job"); got != "by 20" || calls != 0 {
		t.Fatalf("data = %q, calls = %d", got, calls)
	}
	// Fencing again with the same token is a no-op success.
	if err := sqlfence.Claim(ctx, env.Pool, "job", 21); err != nil {
		t.Fatal(err)
	}
}

// InTx on a pool costs the same round trips as the same transaction
// unfenced (the claim travels with BEGIN); row mode costs no statement more
// than a plain UPDATE.
func TestStatementCounts(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`,
		`CREATE TABLE acct (id bigint PRIMARY KEY, balance bigint NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO acct (id, balance) VALUES (1, 0)`)
	pool, qc := countingPool(t, env.URL, 1)
	var calls int
	count := func(f func() error) int64 {
		t.Helper()
		before := qc.n.Load()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return qc.n.Load() - before
	}
	plainTx := func() error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if err := writeData("k", "plain", &calls)(tx); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	fenced := func() error { return sqlfence.InTx(ctx, pool, "k", 1, writeData("k", "fenced", &calls)) }
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	update := func() error { return tbl.Update(ctx, pool, 1, 1, 100) }
	plainUpdate := func() error {
		_, err := pool.Exec(ctx, `UPDATE acct SET balance = $2 WHERE id = $1`, 1, 100)
		return err
	}
	for _, f := range []func() error{plainTx, fenced, update, plainUpdate} {
		count(f) // warm the statement cache
	}
	p, f, u, pu := count(plainTx), count(fenced), count(update), count(plainUpdate)
	t.Logf("statements: plain tx %d, InTx %d, Table.Update %d, plain UPDATE %d", p, f, u, pu)
	if f != p {
		t.Errorf("InTx sent %d statements, plain tx %d: want as many", f, p)
	}
	if u != 1 || pu != 1 {
		t.Errorf("Table.Update sent %d statements, plain UPDATE %d: want 1 each", u, pu)
	}
	// On a pgx.Tx: the savepoint, the claim, fn's statement, the check
	// that fn kept the claim, and the release; unfenced, three.
	outer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Rollback(ctx)
	if n := count(func() error { return sqlfence.InTx(ctx, outer, "k", 1, writeData("k", "nested", &calls)) }); n != 5 {
		t.Errorf("InTx on a pgx.Tx sent %d statements, want 5", n)
	}
}

// InTx sends the resource name inside its BEGIN message as a literal:
// quotes, backslashes and SQL in the name are data, claimed and refused as
// any other name, and a NUL byte is refused before anything is sent.
func TestInTxResourceQuoting(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	for _, name := range []string{`it's`, `back\slash\'`, `x'); DROP TABLE fencekit_tokens; --`, `E'\x41'`, "ünïcode"} {
		if err := sqlfence.InTx(ctx, env.Pool, name, 7, func(pgx.Tx) error { return nil }); err != nil {
			t.Fatalf("InTx(%q): %v", name, err)
		}
		if cur, err := current(ctx, env.Pool, name); err != nil || cur != 7 {
			t.Fatalf("Current(%q) = %v, %v; want 7", name, cur, err)
		}
		err := sqlfence.InTx(ctx, env.Pool, name, 6, func(pgx.Tx) error { return nil })
		var se *fence.StaleError
		if !errors.As(err, &se) || se.Current != 7 || se.Resource != name {
			t.Fatalf("stale InTx(%q): %v, want a stale error with current 7", name, err)
		}
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM fencekit_tokens`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("%d guard rows, %v; want 5", n, err)
	}
	if err := sqlfence.InTx(ctx, env.Pool, "nul\x00", 8, func(pgx.Tx) error { return nil }); !errors.Is(err, fence.ErrInvalid) {
		t.Fatalf("InTx with a NUL byte: %v, want fence.ErrInvalid", err)
	}
}

func TestBadInput(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	pool, qc := countingPool(t, env.URL, 2)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var nilPool *pgxpool.Pool
	var nilConn *pgx.Conn
	var calls int
	fn := writeData("k", "v", &calls)
	tbl, err := sqlfence.NewTable("data", "k", "lock_version", "v")
	if err != nil {
		t.Fatal(err)
	}
	tooBig := valid.MaxToken + 1
	long := strings.Repeat("r", 16<<10)
	var nilTable *sqlfence.Table
	inv := fence.ErrInvalid
	cases := []struct {
		name string
		call func() error
		want string
		is   error
	}{
		{"InTx nil db", func() error { return sqlfence.InTx(ctx, nil, "r", 1, fn) }, "nil database", inv},
		{"InTx nil *pgxpool.Pool", func() error { return sqlfence.InTx(ctx, nilPool, "r", 1, fn) }, "nil database", inv},
		{"InTx nil *pgx.Conn", func() error { return sqlfence.InTx(ctx, nilConn, "r", 1, fn) }, "nil database", inv},
		{"InTx zero token", func() error { return sqlfence.InTx(ctx, pool, "r", 0, fn) }, "token is zero", inv},
		{"InTx token above 2^63-1", func() error { return sqlfence.InTx(ctx, pool, "r", tooBig, fn) }, "above the maximum", inv},
		{"InTx max uint64", func() error { return sqlfence.InTx(ctx, pool, "r", ^fence.Token(0), fn) }, "above the maximum", inv},
		{"InTx empty resource", func() error { return sqlfence.InTx(ctx, pool, "", 1, fn) }, "resource is empty", inv},
		{"InTx NUL in resource", func() error { return sqlfence.InTx(ctx, pool, "a\x00b", 1, fn) }, "control character (U+0000) at byte 1", inv},
		{"InTx invalid UTF-8", func() error { return sqlfence.InTx(ctx, pool, "a\xffb", 1, fn) }, "not valid UTF-8 (byte 1)", inv},
		{"InTx 16 KB resource", func() error { return sqlfence.InTx(ctx, pool, long, 1, fn) }, "16384 bytes, longer than 1024", inv},
		{"InTx nil fn", func() error { return sqlfence.InTx(ctx, pool, "r", 1, nil) }, "nil fn", inv},
		{"InTx cancelled", func() error { return sqlfence.InTx(cancelled, pool, "r", 1, fn) }, "context canceled", context.Canceled},
		{"Claim nil db", func() error { return sqlfence.Claim(ctx, nil, "r", 1) }, "nil database", inv},
		{"Claim zero token", func() error { return sqlfence.Claim(ctx, pool, "r", 0) }, "token is zero", inv},
		{"Claim empty resource", func() error { return sqlfence.Claim(ctx, pool, "", 1) }, "resource is empty", inv},
		{"Claim NUL in resource", func() error { return sqlfence.Claim(ctx, pool, "\x00", 1) }, "control character", inv},
		{"Claim 16 KB resource", func() error { return sqlfence.Claim(ctx, pool, long, 1) }, "longer than 1024", inv},
		{"Claim cancelled", func() error { return sqlfence.Claim(cancelled, pool, "r", 1) }, "context canceled", context.Canceled},
		{"Claim nil pgx.Tx", func() error { var tx pgx.Tx; return sqlfence.Claim(ctx, tx, "r", 1) }, "nil database", inv},
		{"Update nil db", func() error { return tbl.Update(ctx, nil, "k", 1, "v") }, "nil database", inv},
		{"Update zero token", func() error { return tbl.Update(ctx, pool, "k", 0, "v") }, "token is zero", inv},
		{"Update token above 2^63-1", func() error { return tbl.Update(ctx, pool, "k", tooBig, "v") }, "above the maximum", inv},
		{"Update cancelled", func() error { return tbl.Update(cancelled, pool, "k", 1, "v") }, "context canceled", context.Canceled},
		{"Update too few values", func() error { return tbl.Update(ctx, pool, "k", 1) }, "0 values for 1 columns", inv},
		{"Update nil table", func() error { return nilTable.Update(ctx, pool, "k", 1, "v") }, "nil *sqlfence.Table", inv},
		{"Upsert nil table guarded", func() error { return nilTable.WithGuard("r").Upsert(ctx, pool, "k", 1, "v") }, "nil *sqlfence.Table", inv},
		{"Update guard empty", func() error { return tbl.WithGuard("").Update(ctx, pool, "k", 1, "v") }, "WithGuard resource is empty", inv},
		{"Update guard NUL", func() error { return tbl.WithGuard("g\x00").Update(ctx, pool, "k", 1, "v") }, "control character", inv},
		{"Insert too many values", func() error { return tbl.Insert(ctx, pool, "k", 1, "v", "w") }, "2 values for 1 columns", inv},
		{"Insert nil db", func() error { return tbl.Insert(ctx, nilPool, "k", 1, "v") }, "nil database", inv},
		{"Table.Claim nil db", func() error { var v string; return tbl.Claim(ctx, nil, "k", 1, &v) }, "nil database", inv},
		{"Table.Claim zero token", func() error { var v string; return tbl.Claim(ctx, pool, "k", 0, &v) }, "token is zero", inv},
		{"Table.Claim no destination", func() error { return tbl.Claim(ctx, pool, "k", 1) }, "0 destinations for 1 columns", inv},
		{"Table.Claim guard empty", func() error { var v string; return tbl.WithGuard("").Claim(ctx, pool, "k", 1, &v) }, "WithGuard resource is empty", inv},
		{"Table.Claim cancelled", func() error { var v string; return tbl.Claim(cancelled, pool, "k", 1, &v) }, "context canceled", context.Canceled},
		{"Table.Claim nil table", func() error { return nilTable.Claim(ctx, pool, "k", 1) }, "nil *sqlfence.Table", inv},
		{"Upsert cancelled", func() error { return tbl.Upsert(cancelled, pool, "k", 1, "v") }, "context canceled", context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := qc.n.Load()
			err := c.call()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "sqlfence: ") ||
				strings.Count(err.Error(), "fence:") != 1 || len(err.Error()) > 200 {
				t.Fatalf("err = %.300v, want a short sqlfence error containing %q, saying \"sqlfence:\" once", err, c.want)
			}
			if (c.is == fence.ErrInvalid) != errors.Is(err, fence.ErrInvalid) {
				t.Fatalf("err = %v: matches fence.ErrInvalid %v, want %v", err, errors.Is(err, fence.ErrInvalid), c.is == fence.ErrInvalid)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, c.is)
			}
			if n := qc.n.Load() - before; n != 0 {
				t.Fatalf("%d statements sent for bad input", n)
			}
		})
	}
	if calls != 0 {
		t.Fatalf("fn ran %d times for bad input", calls)
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM fencekit_tokens`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("guard rows after bad input: %d, %v; want 0", n, err)
	}
}

// A context cancelled while the transaction runs leaves nothing: the commit
// fails and the transaction is rolled back, claim included.
func TestInTxCancelledMidway(t *testing.T) {
	env := setup(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	var calls int
	if err := sqlfence.InTx(testCtx(t), env.Pool, "doc", 1, writeData("doc", "one", &calls)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	err := sqlfence.InTx(ctx, env.Pool, "doc", 2, func(tx pgx.Tx) error {
		if err := writeData("doc", "two", &calls)(tx); err != nil {
			return err
		}
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := readData(t, env.Pool, "doc"); got != "one" {
		t.Fatalf("data = %q after a cancelled transaction, want one", got)
	}
	if cur, err := current(testCtx(t), env.Pool, "doc"); err != nil || cur != 1 {
		t.Fatalf("Current = %d, %v; want 1", cur, err)
	}
}
