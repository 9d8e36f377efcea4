package stdsql_test

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// msgCounter is a pgx tracer counting the messages a connection sends
// (each a round trip: database/sql sends no pipelines).
type msgCounter struct{ n atomic.Int64 }

func (c *msgCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *msgCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestRoundTrips counts what the doc comments say, through pgx's stdlib:
// Exec sends the three messages of a plain transaction (BEGIN with the
// claim, the statement, the check with COMMIT); InTx two more than the
// same transaction unfenced (the claim, the check); Claim and a row-mode
// Update one, like the unfenced statement.
func TestRoundTrips(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	cfg, err := pgx.ParseConfig(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	qc := &msgCounter{}
	cfg.Tracer = qc
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	ctx := testCtx(t)
	exec(t, db, `CREATE TABLE jobs (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, state text)`, `INSERT INTO jobs (id) VALUES (1)`)
	jobs, err := stdsql.NewTable("jobs", "id", "lock_version", "state")
	if err != nil {
		t.Fatal(err)
	}
	const update = `UPDATE jobs SET state = $1 WHERE id = 1`
	count := func(f func() error) int64 {
		t.Helper()
		before := qc.n.Load()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return qc.n.Load() - before
	}
	plainTx := count(func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, update, "plain"); err != nil {
			return err
		}
		return tx.Commit()
	})
	for _, c := range []struct {
		name string
		want int64
		f    func() error
	}{
		{"Exec", plainTx, func() error { _, err := stdsql.Exec(ctx, db, "jobs", 5, update, "exec"); return err }},
		{"InTx", plainTx + 2, func() error {
			return stdsql.InTx(ctx, db, "jobs", 5, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, update, "intx"); return err })
		}},
		{"Claim", 1, func() error { return stdsql.Claim(ctx, db, "jobs", 6) }},
		{"Table.Update", 1, func() error { return jobs.Update(ctx, db, 1, 6, "row") }},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%s sent %d messages; want %d (a plain transaction sent %d)", c.name, got, c.want, plainTx)
		}
	}
	if plainTx != 3 {
		t.Errorf("a plain transaction sent %d messages, not BEGIN, the statement and COMMIT", plainTx)
	}
}
