// Package stdsql is sqlfence for database/sql: the same guard-row and row
// modes, SQL, guarantees, errors and fencekit_stale_rejected count, on a
// *sql.DB, *sql.Conn or *sql.Tx of any PostgreSQL driver (tested with
// pgx's stdlib and lib/pq). Importing it links no driver: the program
// registers its own. The count goes to the global meter provider
// (otel.GetMeterProvider), registered on the first call.
//
// Guard-row mode needs the fencekit_tokens table (migrations.Up, as for
// sqlfence). [InTx] runs a function in a transaction that first claims the
// resource's guard row; [Exec] does the same for one statement; [Claim]
// records a token alone, on a *sql.Tx until it ends, otherwise at once.
// Row mode: [NewTable] fences rows of your table by a version column, and
// [Table.Claim] is the read of a read-modify-write.
//
// database/sql sends BEGIN and COMMIT alone, so InTx costs two round trips
// more than the same transaction unfenced, and Exec the three of a plain
// transaction; sqlfence (pgx) saves those. Through PgBouncer in transaction
// pooling mode, give pgx's stdlib default_query_exec_mode=exec and lib/pq
// binary_parameters=yes in the URL. The guide is docs/postgres.md; the
// details of each call are those of sqlfence's call of the same name. A
// refusal inside the caller's transaction makes it fail: its Commit
// returns the driver's error (pgx.ErrTxCommitRollback, or lib/pq's
// pq.ErrInFailedTransaction), not a stale one.
package stdsql
