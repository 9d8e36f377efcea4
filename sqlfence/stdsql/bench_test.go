package stdsql_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// BenchmarkExec times, per driver and one client, four ways to run the same
// one-row UPDATE, interleaved in every iteration (rotating which goes
// first) so that the ratios are measured under the same load:
//
//	exec-ns/op        stdsql.Exec
//	intx-ns/op        stdsql.InTx with the statement in fn
//	tx-ns/op          a plain *sql.Tx: BeginTx, ExecContext, Commit
//	autocommit-ns/op  db.ExecContext
//	exec/tx-throughput, intx/tx-throughput  tx-ns ÷ exec-ns, tx-ns ÷ intx-ns
//	exec/autocommit-latency                 exec-ns ÷ autocommit-ns
func BenchmarkExec(b *testing.B) {
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) {
			env := testenv.PostgresMigrated(b)
			db := open(b, driver, env.URL)
			db.SetMaxIdleConns(2)
			ctx := context.Background()
			exec(b, db, `CREATE TABLE jobs (id int PRIMARY KEY, n bigint)`, `INSERT INTO jobs VALUES (1, 0), (2, 0), (3, 0), (4, 0)`)
			const update = `UPDATE jobs SET n = n + 1 WHERE id = $1`
			ops := []func(tok fence.Token) error{
				func(tok fence.Token) error { _, err := stdsql.Exec(ctx, db, "exec", tok, update, 1); return err },
				func(tok fence.Token) error {
					return stdsql.InTx(ctx, db, "intx", tok, func(tx *sql.Tx) error {
						_, err := tx.ExecContext(ctx, update, 2)
						return err
					})
				},
				func(fence.Token) error {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					if _, err := tx.ExecContext(ctx, update, 3); err != nil {
						_ = tx.Rollback()
						return err
					}
					return tx.Commit()
				},
				func(fence.Token) error { _, err := db.ExecContext(ctx, update, 4); return err },
			}
			var spent [4]time.Duration
			for _, op := range ops { // warm up: connections, prepared statements
				if err := op(1); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				for k := range ops {
					j := (i + k) % len(ops)
					start := time.Now()
					if err := ops[j](fence.Token(i + 2)); err != nil {
						b.Fatal(err)
					}
					spent[j] += time.Since(start)
				}
				i++
			}
			ns := func(j int) float64 { return float64(spent[j].Nanoseconds()) / float64(i) }
			b.ReportMetric(ns(0), "exec-ns/op")
			b.ReportMetric(ns(1), "intx-ns/op")
			b.ReportMetric(ns(2), "tx-ns/op")
			b.ReportMetric(ns(3), "autocommit-ns/op")
			b.ReportMetric(ns(2)/ns(0), "exec/tx-throughput")
			b.ReportMetric(ns(2)/ns(1), "intx/tx-throughput")
			b.ReportMetric(ns(0)/ns(3), "exec/autocommit-latency")
		})
	}
}
