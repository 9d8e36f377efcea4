package sqlfence_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/sqlfence"
)

func TestTableUpdate(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, owner text, balance int NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO acct (id, owner, balance) VALUES (1, 'ann', 0)`)
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance", "owner")
	if err != nil {
		t.Fatal(err)
	}
	read := func() (bal int, owner string, ver int64) {
		t.Helper()
		if err := env.Pool.QueryRow(ctx, `SELECT balance, owner, lock_version FROM acct WHERE id = 1`).Scan(&bal, &owner, &ver); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := tbl.Update(ctx, env.Pool, 1, 10, 100, "bob"); err != nil {
		t.Fatal(err)
	}
	if b, o, v := read(); b != 100 || o != "bob" || v != 10 {
		t.Fatalf("after token 10: %d %s %d", b, o, v)
	}
	wantStale(t, tbl.Update(ctx, env.Pool, 1, 9, 90, "eve"), "acct:1", 9, 10)
	if b, o, v := read(); b != 100 || o != "bob" || v != 10 {
		t.Fatalf("stale update changed the row: %d %s %d", b, o, v)
	}
	if err := tbl.Update(ctx, env.Pool, 1, 10, 101, "bob"); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if err := tbl.Update(ctx, env.Pool, 1, 12, 120, "cy"); err != nil {
		t.Fatalf("newer token: %v", err)
	}
	if b, o, v := read(); b != 120 || o != "cy" || v != 12 {
		t.Fatalf("after token 12: %d %s %d", b, o, v)
	}
	if v, err := lockVersion(ctx, env.Pool, "acct", 1); err != nil || v != 12 {
		t.Fatalf("Version = %d, %v", v, err)
	}
	err = tbl.Update(ctx, env.Pool, 2, 50, 1, "x")
	if !errors.Is(err, sqlfence.ErrNoRow) || !strings.Contains(err.Error(), "acct:2") {
		t.Fatalf("missing row: %v, want ErrNoRow naming acct:2", err)
	}
	// A NULL version counts as 0: any token may write.
	exec(t, env.Pool, `ALTER TABLE acct ALTER lock_version DROP NOT NULL`, `INSERT INTO acct (id, balance, lock_version) VALUES (3, 0, NULL)`)
	if err := tbl.Update(ctx, env.Pool, 3, 1, 7, "n"); err != nil {
		t.Fatalf("NULL version: %v", err)
	}
	// A database error (a value of the wrong type) is reported as such.
	if err := tbl.Update(ctx, env.Pool, 1, 13, "not a number", "x"); err == nil || errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("bad value: %v", err)
	}
}

// acctTable creates acct(id, balance, lock_version) in a fresh schema.
func acctTable(t *testing.T) (*testenv.PostgresEnv, *sqlfence.Table) {
	env := setup(t)
	exec(t, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`)
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	return env, tbl
}

func TestTableInsert(t *testing.T) {
	env, tbl := acctTable(t)
	ctx := testCtx(t)
	if err := tbl.Insert(ctx, env.Pool, 1, 10, 100); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(ctx, env.Pool, 1, 11, 110); !errors.Is(err, sqlfence.ErrRowExists) {
		t.Fatalf("second insert: %v, want ErrRowExists", err)
	}
	wantStale(t, tbl.Insert(ctx, env.Pool, 1, 9, 90), "acct:1", 9, 10)
	var bal, ver int64
	if err := env.Pool.QueryRow(ctx, `SELECT balance, lock_version FROM acct WHERE id = 1`).Scan(&bal, &ver); err != nil || bal != 100 || ver != 10 {
		t.Fatalf("row = %d v%d (%v), want 100 v10", bal, ver, err)
	}
}

// Quoted names: reserved words, mixed case and a schema-qualified table.
func TestTableQuotedNames(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE "Order" ("select" int PRIMARY KEY, "from" text, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO "Order" ("select", "from") VALUES (1, 'a')`)
	tbl, err := sqlfence.NewTable(env.Schema+".Order", "select", "lock_version", "from")
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Update(ctx, env.Pool, 1, 3, "b"); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(ctx, env.Pool, 2, 3, "c"); err != nil {
		t.Fatal(err)
	}
	lower, err := sqlfence.NewTable("order", "select", "lock_version", "from")
	if err != nil {
		t.Fatal(err)
	}
	if err := lower.Update(ctx, env.Pool, 1, 4, "d"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("names are case-sensitive once quoted; got %v", err)
	}
}

func TestNewTableRejects(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := []struct {
		table, key, ver string
		cols            []string
		want            string
	}{
		{"", "id", "v", nil, "table name is empty"},
		{"t", "", "v", nil, "key column name is empty"},
		{"t", "id", "", nil, "version column name is empty"},
		{`t"; DROP TABLE x; --`, "id", "v", nil, `byte 1 is '"'`},
		{"t;", "id", "v", nil, "byte 1 is ';'"},
		{"t", `i"d`, "v", nil, `byte 1 is '"'`},
		{"t", "id", "v", []string{"ok", "bad col"}, "column 2"},
		{long, "id", "v", nil, "64 bytes"},
		{"t", long, "v", nil, "64 bytes"},
		{"s." + long, "id", "v", nil, "64 bytes"},
		{"a.b.c", "id", "v", nil, "2 dots"},
		{".t", "id", "v", nil, "empty part"},
		{"t.", "id", "v", nil, "empty part"},
		{"s.t", "s.id", "v", nil, "byte 1 is '.'"},
		{"1t", "id", "v", nil, "starts with a digit"},
		{"tä", "id", "v", nil, "byte 1"},
		{"t", "id", "id", nil, "also the key column"},
		{"t", "id", "v", []string{"v"}, "also the version column"},
		{"t", "id", "v", []string{"c", "c"}, "also the column 1"},
	}
	for _, c := range cases {
		tbl, err := sqlfence.NewTable(c.table, c.key, c.ver, c.cols...)
		if err == nil || tbl != nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "sqlfence: ") {
			t.Errorf("NewTable(%q, %q, %q, %q) = %v, want error containing %q", c.table, c.key, c.ver, c.cols, err, c.want)
		}
	}
	if _, err := sqlfence.NewTable(strings.Repeat("a", 63), "_x9", "Lock_Version"); err != nil {
		t.Errorf("63-byte name refused: %v", err)
	}
}

func TestTableUpsert(t *testing.T) {
	env, tbl := acctTable(t)
	ctx := testCtx(t)
	read := func() (bal, ver int64) {
		t.Helper()
		if err := env.Pool.QueryRow(ctx, `SELECT balance, lock_version FROM acct WHERE id = 1`).Scan(&bal, &ver); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := tbl.Upsert(ctx, env.Pool, 1, 10, 100); err != nil {
		t.Fatalf("upsert of a missing row: %v", err)
	}
	if b, v := read(); b != 100 || v != 10 {
		t.Fatalf("after insert: %d v%d", b, v)
	}
	if err := tbl.Upsert(ctx, env.Pool, 1, 10, 101); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if err := tbl.Upsert(ctx, env.Pool, 1, 12, 120); err != nil {
		t.Fatalf("newer token: %v", err)
	}
	wantStale(t, tbl.Upsert(ctx, env.Pool, 1, 11, 110), "acct:1", 11, 12)
	if b, v := read(); b != 120 || v != 12 {
		t.Fatalf("after stale upsert: %d v%d, want 120 v12", b, v)
	}
	if err := tbl.Upsert(ctx, env.Pool, 1, 13, "not a number"); err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("bad value: %v, want the database's error", err)
	}
}

// The largest valid token, 2^63-1, is PostgreSQL's largest bigint: both
// modes store it and read it back exactly; one more is refused (TestBadInput).
func TestMaxToken(t *testing.T) {
	env, tbl := acctTable(t)
	ctx := testCtx(t)
	if err := sqlfence.Claim(ctx, env.Pool, "r", valid.MaxToken-1); err != nil {
		t.Fatal(err)
	}
	if err := sqlfence.Claim(ctx, env.Pool, "r", valid.MaxToken); err != nil {
		t.Fatalf("Claim(MaxToken): %v", err)
	}
	if cur, err := current(ctx, env.Pool, "r"); err != nil || cur != valid.MaxToken {
		t.Fatalf("Current = %d, %v; want %d", cur, err, valid.MaxToken)
	}
	wantStale(t, sqlfence.Claim(ctx, env.Pool, "r", valid.MaxToken-1), "r", valid.MaxToken-1, valid.MaxToken)
	if err := tbl.Upsert(ctx, env.Pool, 1, valid.MaxToken, 1); err != nil {
		t.Fatalf("Upsert(MaxToken): %v", err)
	}
	if v, err := lockVersion(ctx, env.Pool, "acct", 1); err != nil || v != valid.MaxToken {
		t.Fatalf("Version = %d, %v; want %d", v, err, valid.MaxToken)
	}
	wantStale(t, tbl.Update(ctx, env.Pool, 1, valid.MaxToken-1, 2), "acct:1", valid.MaxToken-1, valid.MaxToken)
}

// A table or column whose name is also one the statements use internally
// (WITH items, the row alias, the output column) works like any other.
func TestTableNamedLikeInternals(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	for _, name := range []string{"w", "fencekit_w", "fencekit_seen", "fencekit_row", "fencekit_claim", "fencekit_guard", "ver", "t"} {
		exec(t, env.Pool, `CREATE TABLE `+name+` (id int PRIMARY KEY, ver text, fencekit_row bigint NOT NULL DEFAULT 0)`)
		tbl, err := sqlfence.NewTable(name, "id", "fencekit_row", "ver")
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Update(ctx, env.Pool, 1, 5, "a"); !errors.Is(err, sqlfence.ErrNoRow) {
			t.Fatalf("%s: Update of a missing row: %v, want ErrNoRow", name, err)
		}
		if err := tbl.Insert(ctx, env.Pool, 1, 5, "a"); err != nil {
			t.Fatalf("%s: Insert: %v", name, err)
		}
		if err := tbl.Insert(ctx, env.Pool, 1, 5, "b"); !errors.Is(err, sqlfence.ErrRowExists) {
			t.Fatalf("%s: Insert of an existing row: %v, want ErrRowExists", name, err)
		}
		if err := tbl.Update(ctx, env.Pool, 1, 6, "b"); err != nil {
			t.Fatalf("%s: Update: %v", name, err)
		}
		if err := tbl.Upsert(ctx, env.Pool, 1, 7, "c"); err != nil {
			t.Fatalf("%s: Upsert: %v", name, err)
		}
		wantStale(t, tbl.Update(ctx, env.Pool, 1, 6, "d"), name+":1", 6, 7)
		wantStale(t, tbl.Upsert(ctx, env.Pool, 1, 6, "d"), name+":1", 6, 7)
		guarded := tbl.WithGuard(name)
		if err := guarded.Insert(ctx, env.Pool, 2, 8, "e"); err != nil {
			t.Fatalf("%s: guarded Insert: %v", name, err)
		}
		if err := guarded.Update(ctx, env.Pool, 1, 8, "e"); err != nil {
			t.Fatalf("%s: guarded Update: %v", name, err)
		}
		if err := guarded.Upsert(ctx, env.Pool, 1, 9, "f"); err != nil {
			t.Fatalf("%s: guarded Upsert: %v", name, err)
		}
		wantStale(t, guarded.Update(ctx, env.Pool, 1, 8, "g"), name, 8, 9)
	}
}

// An accepted row-mode write is one plain statement, the UPDATE or INSERT
// itself with the version condition (no CTE, no RETURNING): it costs what the
// unfenced statement costs. Only a refusal sends a second statement, to tell
// stale from missing.
func TestRowModeAcceptedIsOnePlainStatement(t *testing.T) {
	env, tbl := acctTable(t)
	ctx := testCtx(t)
	conn, rec := recordingConn(t, env.URL)
	want := func(what string, err error, prefixes ...string) {
		t.Helper()
		sqls := rec.take()
		if len(sqls) != len(prefixes) {
			t.Fatalf("%s (%v) sent %d statements %q, want %d", what, err, len(sqls), sqls, len(prefixes))
		}
		for i, p := range prefixes {
			if !strings.HasPrefix(sqls[i], p) || strings.Contains(sqls[i], "RETURNING") {
				t.Fatalf("%s: statement %d is %q, want a plain statement starting %q", what, i+1, sqls[i], p)
			}
		}
	}
	err := tbl.Insert(ctx, conn, 1, 5, 50)
	want("accepted Insert", err, "INSERT INTO")
	err = tbl.Update(ctx, conn, 1, 6, 60)
	want("accepted Update", err, "UPDATE")
	err = tbl.Upsert(ctx, conn, 1, 7, 70)
	want("accepted Upsert", err, "INSERT INTO")
	err = tbl.Upsert(ctx, conn, 2, 7, 70)
	want("accepted Upsert of a new row", err, "INSERT INTO")
	err = tbl.Update(ctx, conn, 1, 6, 60)
	wantStale(t, err, "acct:1", 6, 7)
	want("stale Update", err, "UPDATE", "SELECT")
	err = tbl.Update(ctx, conn, 3, 8, 80)
	want("Update of a missing row", err, "UPDATE", "SELECT")
	// A guarded write is one statement too: the claim is a WITH item of it.
	if err := tbl.WithGuard("acct").Update(ctx, conn, 1, 8, 80); err != nil {
		t.Fatal(err)
	}
	if sqls := rec.take(); len(sqls) != 1 || !strings.HasPrefix(sqls[0], "WITH fencekit_claim") {
		t.Fatalf("accepted guarded Update sent %q, want one statement", sqls)
	}
}
