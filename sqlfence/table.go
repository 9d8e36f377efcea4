package sqlfence

import (
	"context"
	"errors"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/pgsql"
	"github.com/fencekit/fencekit/internal/valid"
)

// ErrNoRow is returned (wrapped) by [Table.Update] and [Table.Claim] when
// no row has the key. Unlike a refusal, it leaves the caller's
// transaction usable.
var ErrNoRow = errors.New("sqlfence: no such row")

// ErrRowExists is returned (wrapped) by [Table.Insert] when a row with the
// key already exists and its version does not make the insert stale.
var ErrRowExists = errors.New("sqlfence: row already exists")

// Table fences rows of the caller's own table with a version column (the
// lock_version mode): each write presents a fencing token, is applied only
// when the row's version is not greater than the token, and stores the token
// as the row's new version, in one statement.
//
// The table must have a unique key column (primary key or unique
// constraint) and a bigint version column, ideally NOT NULL DEFAULT 0 (a
// NULL version counts as 0). Statements are built and validated once by
// [NewTable]; pgx prepares and caches them per connection, so each call
// after a connection's first is one round trip. A Table is immutable and
// safe for concurrent use.
//
// An unbound Table is its own fence: it compares each row's version with
// the token and knows nothing of [InTx]'s guard rows. To write rows that
// InTx transactions of a resource also write, bind the table to that
// resource with [Table.WithGuard]. A deleted row has no version left to
// compare: any token may insert it again. Delete inside InTx, and write
// the table only through a Table bound to that InTx's resource.
type Table struct{ core *pgsql.Table }

// pkg names sqlfence in the errors of its tables.
var pkg = &pgsql.Pkg{Name: "sqlfence", ErrNoRow: ErrNoRow, ErrRowExists: ErrRowExists}

// NewTable validates the names and builds the statements for table (name or
// schema.name), its unique key column, its version column and the columns
// that Update and Insert set, in the order their values are passed. Names
// must be plain identifiers, [A-Za-z_][A-Za-z0-9_]* of at most 63 bytes;
// they are quoted, so they are case-sensitive (an unquoted CREATE TABLE
// Users creates users). NewTable sends nothing.
//
// Errors: [fence.ErrInvalid] naming the bad argument: a name that is not a
// plain identifier, or a column listed twice.
func NewTable(table, keyColumn, versionColumn string, columns ...string) (*Table, error) {
	core, err := pgsql.NewTable(pkg, table, keyColumn, versionColumn, columns)
	if err != nil {
		return nil, err
	}
	return &Table{core}, nil
}

// WithGuard returns a copy of t whose writes also claim resource's guard
// row in fencekit_tokens (as [InTx] and [Claim] do), in the same statement
// as the row write: a write is applied only when neither the guard's token
// nor the row's version is greater than its token. Its writes and
// InTx(resource) writes then fence each other, in both directions: a
// holder that wrote through either is safe from every older holder writing
// through either. Use it when the rows of a table are written both by
// Table calls and inside InTx transactions of one resource.
//
// A guarded write costs one round trip, like an unbound one; the guard row
// it claims stays locked until its transaction ends (at once in autocommit),
// so on one resource guarded writes run one after the other, as InTx
// transactions do. In autocommit the claim happens even when the row then
// refuses the write (a newer version, or a missing row); in the caller's
// transaction it ends with that transaction, which a newer version's
// refusal makes fail. The guard only ever moves to a token that was
// presented, which shuts out older holders only.
// A refusal names the guard's resource when the guard refused, and
// "table:key" when the row did. WithGuard sends nothing; a bad resource makes every write of the copy fail, sending
// nothing. On a nil *Table it returns nil.
func (t *Table) WithGuard(resource string) *Table {
	if t == nil {
		return nil
	}
	return &Table{t.core.WithGuard(resource)}
}

// Update sets the row with key to values (one per column given to
// [NewTable], in order) and its version to tok, only when the row's version
// is not greater than tok: one statement, UPDATE ... WHERE key = $1 AND
// version <= tok, and one round trip. A refused update (no row changed)
// costs a second statement, which reads the row's version to tell a stale
// write from a missing row. On a pgx.Tx the row stays locked until the
// transaction ends.
//
// Errors: a [*fence.StaleError] whose Resource is "table:key" and Current
// the row's version or, for a table bound by [Table.WithGuard], the
// guard's resource and token (nothing changed; in a transaction, either
// refusal also makes it fail, as [Claim]'s does: its Commit returns
// pgx.ErrTxCommitRollback; roll it back); [ErrNoRow] when no row has the
// key (the transaction stays usable); [fence.ErrInvalid] for a nil table or db, a bad token, a wrong number of values or a bad guard
// resource (nothing sent); ctx's error (nothing sent when ctx is already done);
// PostgreSQL's errors. Once ctx has ended, errors also wrap
// context.Cause(ctx) (for a lease's Context, lease.ErrLost).
func (t *Table) Update(ctx context.Context, db Querier, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "update", key, tok, values)
}

// Insert inserts a row with key, version tok and values (one per column
// given to [NewTable], in order) unless a row with key exists: one
// statement (INSERT ... ON CONFLICT (key) DO NOTHING), one round trip. When
// the row exists, a second statement reads its version to tell stale from
// exists.
//
// Errors: a [*fence.StaleError] when the row exists with a version greater
// than tok; [ErrRowExists] when it exists otherwise (use [Table.Update]);
// and the errors of [Table.Update]. Nothing is changed on error.
func (t *Table) Insert(ctx context.Context, db Querier, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "insert", key, tok, values)
}

// Upsert writes the row with key, version tok and values whether or not it
// exists, unless it exists with a version greater than tok: an insert, or
// the fenced update of [Table.Update], in one statement and one round trip
// (INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE version <= tok; a
// second statement reads the version of a row that refused it). The key
// column needs a unique index or constraint.
//
// Errors: a [*fence.StaleError] when the row's version is greater than tok
// (nothing changed), and the errors of [Table.Update].
func (t *Table) Upsert(ctx context.Context, db Querier, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "upsert", key, tok, values)
}

// Claim is the read of a read-modify-write: it raises the row's version to
// tok and scans the row's columns (those given to [NewTable], in order)
// into dest, in one statement and one round trip,
//
//	UPDATE t SET version = tok WHERE key = $1 AND version <= tok RETURNING columns
//
// so that from this read on, every holder with an older token is refused
// ([Table.Update] returns a stale error): a write the old holder makes
// after the new holder read the row can no longer be accepted and then
// overwritten. A plain SELECT followed by Update does not do that. Claim
// writes a row version, even when the version already is tok; on a pgx.Tx
// the row stays locked until the transaction ends. On a table bound by
// [Table.WithGuard] it also claims the guard row, as Update does.
//
// Errors are those of [Table.Update]: a [*fence.StaleError] when the row's
// version (or the guard's token) is greater than tok, nothing changed;
// [ErrNoRow] when no row has the key (then nothing is recorded: an older
// holder can still insert it; fence a read-modify-write that may create
// the row with [InTx] or a table bound by [Table.WithGuard]); [fence.ErrInvalid] also for a number
// of destinations other than the number of columns (nothing sent).
func (t *Table) Claim(ctx context.Context, db Querier, key any, tok fence.Token, dest ...any) error {
	if err := t.checkHandle(db); err != nil {
		return err
	}
	return abortIfStale(ctx, db, t.core.Claim(ctx, pgxSender{db}, key, tok, dest))
}

// write runs op ("update", "insert" or "upsert").
func (t *Table) write(ctx context.Context, db Querier, op string, key any, tok fence.Token, values []any) error {
	if err := t.checkHandle(db); err != nil {
		return err
	}
	return abortIfStale(ctx, db, t.core.Write(ctx, pgxSender{db}, op, key, tok, values))
}

// errNilTable is what the methods of a nil *Table return.
var errNilTable = valid.Invalid("sqlfence: nil *sqlfence.Table (NewTable returned an error)")

// checkHandle refuses a nil table or db.
func (t *Table) checkHandle(db Querier) error {
	switch {
	case t == nil:
		return errNilTable
	case isNil(db):
		return errNilDB
	}
	return nil
}
