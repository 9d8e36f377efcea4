package stdsql

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
var ErrNoRow = errors.New("stdsql: no such row")

// ErrRowExists is returned (wrapped) by [Table.Insert] when a row with the
// key already exists and its version does not make the insert stale.
var ErrRowExists = errors.New("stdsql: row already exists")

// Table fences rows of the caller's own table with a version column (row
// mode, lock_version): each write presents a token, is applied only when
// the row's version is not greater than it, and stores it as the row's new
// version, in one statement. It is sqlfence.Table for database/sql, with
// the same statements, guarantees and errors: see that type for the
// details. A Table is immutable and safe for concurrent use.
type Table struct{ core *pgsql.Table }

// pkg names stdsql in the errors of its tables.
var pkg = &pgsql.Pkg{Name: "stdsql", ErrNoRow: ErrNoRow, ErrRowExists: ErrRowExists}

// NewTable validates the names and builds the statements for table (name or
// schema.name), its unique key column, its bigint version column and the
// columns that writes set and Claim returns, in that order. Names must be
// plain identifiers, [A-Za-z_][A-Za-z0-9_]* of at most 63 bytes, and are
// case-sensitive (they are quoted). NewTable sends nothing.
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
// row (as [InTx] and [Claim] do) in the same statement, so that they and
// InTx(resource) writes fence each other. On a nil *Table it returns nil;
// a bad resource makes every write fail.
func (t *Table) WithGuard(resource string) *Table {
	if t == nil {
		return nil
	}
	return &Table{t.core.WithGuard(resource)}
}

// Update sets the row with key to values (one per column, in order) and
// its version to tok, only when the row's version is not greater than tok:
// one statement, one round trip; a refused update costs a second
// statement, to tell a stale write from a missing row.
//
// Errors: a [*fence.StaleError] (Resource "table:key", or the guard's
// resource for a table from [Table.WithGuard]; nothing changed; in a
// transaction, either refusal also makes it fail, as [Claim]'s does);
// [ErrNoRow] (the transaction stays usable);
// [fence.ErrInvalid] for a nil table or db, a bad token, a wrong number of values or a bad guard resource
// (nothing sent); ctx's error; the driver's errors. Once ctx has ended,
// errors also wrap context.Cause(ctx).
func (t *Table) Update(ctx context.Context, db Execer, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "update", key, tok, values)
}

// Insert inserts a row with key, version tok and values unless a row with
// key exists: one statement. Errors: a [*fence.StaleError] when the row
// exists with a greater version, [ErrRowExists] when it exists otherwise,
// and those of [Table.Update].
func (t *Table) Insert(ctx context.Context, db Execer, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "insert", key, tok, values)
}

// Upsert inserts the row, or updates it as [Table.Update] does, in one
// statement. Errors: those of [Table.Update], without ErrNoRow.
func (t *Table) Upsert(ctx context.Context, db Execer, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "upsert", key, tok, values)
}

// Claim is the read of a read-modify-write: it raises the row's version to
// tok and scans the row's columns into dest (one per column, in order), in
// one statement and one round trip, so that from this read on every
// holder with an older token is refused. A plain SELECT does not do that:
// an older holder's write after it would be accepted, then overwritten.
//
// Errors: those of [Table.Update]; [ErrNoRow] records nothing (fence a
// read-modify-write that may create the row with [InTx] or a table from
// [Table.WithGuard]); [fence.ErrInvalid] for a wrong number of dest.
func (t *Table) Claim(ctx context.Context, db Execer, key any, tok fence.Token, dest ...any) error {
	if err := t.checkHandle(db); err != nil {
		return err
	}
	return abortIfStale(ctx, db, t.core.Claim(ctx, sender{db}, key, tok, dest))
}

// write runs op ("update", "insert" or "upsert").
func (t *Table) write(ctx context.Context, db Execer, op string, key any, tok fence.Token, values []any) error {
	if err := t.checkHandle(db); err != nil {
		return err
	}
	return abortIfStale(ctx, db, t.core.Write(ctx, sender{db}, op, key, tok, values))
}

// errNilTable is what the methods of a nil *Table return.
var errNilTable = valid.Invalid("stdsql: nil *stdsql.Table (NewTable returned an error)")

// checkHandle refuses a nil table or db.
func (t *Table) checkHandle(db Execer) error {
	switch {
	case t == nil:
		return errNilTable
	case isNil(db):
		return errNilDB
	}
	return nil
}
