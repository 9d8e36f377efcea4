package sqlfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
)

// ErrNoRow is returned (wrapped) by [Table.Update] when no row has the key.
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
type Table struct {
	name      string // as given, for errors
	columns   int
	updateSQL string
	insertSQL string
	upsertSQL string
	readSQL   string
}

// NewTable validates the names and builds the statements for table (name or
// schema.name), its unique key column, its version column and the columns
// that Update and Insert set, in the order their values are passed. Names
// must be plain identifiers, [A-Za-z_][A-Za-z0-9_]* of at most 63 bytes;
// they are quoted, so they are case-sensitive (an unquoted CREATE TABLE
// Users creates users). NewTable sends nothing.
//
// Errors: [ErrInvalidIdentifier] naming the bad argument, or an error for a
// column listed twice.
func NewTable(table, keyColumn, versionColumn string, columns ...string) (*Table, error) {
	tid, err := parseIdent("table", table, true)
	if err != nil {
		return nil, err
	}
	key, err := parseIdent("key column", keyColumn, false)
	if err != nil {
		return nil, err
	}
	ver, err := parseIdent("version column", versionColumn, false)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{keyColumn: "key column"}
	if prev, dup := seen[versionColumn]; dup {
		return nil, fmt.Errorf("sqlfence: version column %q is also the %s", versionColumn, prev)
	}
	seen[versionColumn] = "version column"
	cols := make([]string, len(columns))
	for i, c := range columns {
		id, err := parseIdent("column "+strconv.Itoa(i+1), c, false)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c]; dup {
			return nil, fmt.Errorf("sqlfence: column %d %q is also the %s", i+1, c, prev)
		}
		seen[c] = "column " + strconv.Itoa(i+1)
		cols[i] = id.Sanitize()
	}
	t, k, v := tid.Sanitize(), key.Sanitize(), ver.Sanitize()
	return &Table{
		name:      table,
		columns:   len(columns),
		updateSQL: buildUpdate(t, k, v, cols),
		insertSQL: buildInsert(t, k, v, cols, ""),
		upsertSQL: buildInsert(t, k, v, cols, buildUpsertAction(k, v, cols)),
		readSQL:   "SELECT COALESCE(" + v + ", 0) FROM " + t + " WHERE " + k + " = $1",
	}, nil
}

// fenced wraps dml, an UPDATE or INSERT of table t that writes the row with
// key $1 (k = $1) or nothing, into the one statement sqlfence sends. It
// returns (true, version written) when dml wrote, and otherwise (false,
// the row's version as the statement's snapshot shows it), or no row when
// the snapshot has none: stale, exists and missing told apart in one round
// trip. fencekit_seen comes first in the WITH list so that t in it names
// the user's table even when that table is called fencekit_w (a non-recursive
// WITH item cannot see itself or later items); dml's target is always a
// table.
func fenced(t, k, v, dml string) string {
	return "WITH fencekit_seen AS (SELECT COALESCE(" + v + ", 0) AS ver FROM " + t + " WHERE " + k + " = $1),\n" +
		"fencekit_w AS (" + dml + " RETURNING " + v + " AS ver)\n" +
		"SELECT true, ver FROM fencekit_w UNION ALL " +
		"SELECT false, ver FROM fencekit_seen WHERE NOT EXISTS (SELECT 1 FROM fencekit_w)"
}

// buildUpdate returns the fenced update: $1 key, $2 token, $3... values.
func buildUpdate(t, k, v string, cols []string) string {
	var b strings.Builder
	b.WriteString("UPDATE " + t + " SET " + v + " = $2")
	for i, c := range cols {
		b.WriteString(", " + c + " = $" + strconv.Itoa(i+3))
	}
	b.WriteString(" WHERE " + k + " = $1 AND COALESCE(" + v + ", 0) <= $2")
	return fenced(t, k, v, b.String())
}

// buildUpsertAction returns the ON CONFLICT action of the fenced upsert.
func buildUpsertAction(k, v string, cols []string) string {
	var b strings.Builder
	b.WriteString("DO UPDATE SET " + v + " = EXCLUDED." + v)
	for _, c := range cols {
		b.WriteString(", " + c + " = EXCLUDED." + c)
	}
	b.WriteString(" WHERE COALESCE(fencekit_row." + v + ", 0) <= EXCLUDED." + v)
	return b.String()
}

// buildInsert returns the insert: $1 key, $2 token, $3... values. With an
// empty action it is insert-if-absent (DO NOTHING); otherwise action is the
// ON CONFLICT action of the upsert.
func buildInsert(t, k, v string, cols []string, action string) string {
	var b strings.Builder
	if action == "" {
		action = "DO NOTHING"
	}
	b.WriteString("INSERT INTO " + t + " AS fencekit_row (" + k + ", " + v)
	for _, c := range cols {
		b.WriteString(", " + c)
	}
	b.WriteString(") VALUES ($1, $2")
	for i := range cols {
		b.WriteString(", $" + strconv.Itoa(i+3))
	}
	b.WriteString(") ON CONFLICT (" + k + ") " + action)
	return fenced(t, k, v, b.String())
}

// Update sets the row with key to values (one per column given to
// [NewTable], in order) and its version to tok, only when the row's version
// is not greater than tok. One statement, one round trip (two in the rare
// race where a newer write committed while this one waited on the row lock;
// the refusal is re-read with a fresh snapshot to report the real version).
// On a pgx.Tx the row stays locked until the transaction ends.
//
// Errors: a [*fence.StaleError] whose Resource is "table:key" and Current
// the row's version (nothing changed); [ErrNoRow] when no row has the key;
// [fence.ErrInvalidToken]; [ErrNilDB]; an error for a wrong number of
// values; ctx's error (nothing sent when ctx is already done); PostgreSQL's
// errors.
func (t *Table) Update(ctx context.Context, db Querier, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "update", t.updateSQL, key, tok, values)
}

// Insert inserts a row with key, version tok and values (one per column
// given to [NewTable], in order) unless a row with key exists. One
// statement, one round trip (two when the row was inserted concurrently,
// after the statement's snapshot: its version is then read in a second
// statement, to tell stale from exists).
//
// Errors: a [*fence.StaleError] when the row exists with a version greater
// than tok; [ErrRowExists] when it exists otherwise (use [Table.Update]);
// and the argument errors of [Table.Update]. Nothing is changed on error.
func (t *Table) Insert(ctx context.Context, db Querier, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "insert", t.insertSQL, key, tok, values)
}

// Upsert writes the row with key, version tok and values whether or not it
// exists, unless it exists with a version greater than tok: an insert, or
// the fenced update of [Table.Update], in one statement and one round trip
// (INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE version <= tok; two in
// the race described at [Table.Update]). The key column needs a unique
// index or constraint.
//
// Errors: a [*fence.StaleError] when the row's version is greater than tok
// (nothing changed), and the argument errors of [Table.Update].
func (t *Table) Upsert(ctx context.Context, db Querier, key any, tok fence.Token, values ...any) error {
	return t.write(ctx, db, "upsert", t.upsertSQL, key, tok, values)
}

// Version returns the row's version (0 for a NULL version). One round trip.
//
// Errors: [ErrNoRow] when no row has the key; [ErrNilDB]; ctx's error
// (nothing sent when ctx is already done); PostgreSQL's errors.
func (t *Table) Version(ctx context.Context, db Querier, key any) (fence.Token, error) {
	res := t.resource(key)
	if isNil(db) {
		return 0, fmt.Errorf("%w (%s)", ErrNilDB, res)
	}
	var v int64
	err := db.QueryRow(ctx, t.readSQL, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s", ErrNoRow, res)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlfence: version of %s: %w", res, err)
	}
	return fence.Token(v), nil
}

func (t *Table) write(ctx context.Context, db Querier, op, sql string, key any, tok fence.Token, values []any) error {
	if err := precheck(ctx, db, tok); err != nil {
		return describe(err, op+" "+t.resource(key))
	}
	if len(values) != t.columns {
		return fmt.Errorf("sqlfence: %s %s: %d values for %d columns", op, t.resource(key), len(values), t.columns)
	}
	args := make([]any, 0, 2+len(values))
	args = append(args, key, int64(tok))
	args = append(args, values...)
	var done bool
	var cur int64
	err := db.QueryRow(ctx, sql, args...).Scan(&done, &cur)
	switch {
	case err == nil && done:
		return nil
	case err == nil && fence.IsStale(tok, fence.Token(cur)):
		return &fence.StaleError{Resource: t.resource(key), Presented: tok, Current: fence.Token(cur)}
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("sqlfence: %s %s with token %s: %w", op, t.resource(key), tok, err)
	}
	// Refused (or matched nothing), and the statement's snapshot does not
	// say why: it shows no row (ErrNoRows), or a version that allows tok.
	return t.explain(ctx, db, op, key, tok, err == nil, cur)
}

// explain turns a refusal that the statement's snapshot does not explain
// into an error. visible says whether the snapshot saw the row, with
// version cur. Under READ COMMITTED the snapshot predates what was
// committed while the statement waited on a row lock; a new statement
// (one more round trip) sees it.
func (t *Table) explain(ctx context.Context, db Querier, op string, key any, tok fence.Token, visible bool, cur int64) error {
	res := t.resource(key)
	switch op {
	case "insert":
		if visible {
			return fmt.Errorf("%w: %s has version %d", ErrRowExists, res, cur)
		}
		// Inserted concurrently: stale if its version is newer, as without
		// the race.
		v, err := reread(ctx, db, t.readSQL, key)
		switch {
		case err == nil && fence.IsStale(tok, v):
			return &fence.StaleError{Resource: res, Presented: tok, Current: v}
		case err == nil:
			return fmt.Errorf("%w: %s has version %s (inserted concurrently)", ErrRowExists, res, v)
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: %s (inserted and deleted concurrently)", ErrRowExists, res)
		default:
			return fmt.Errorf("sqlfence: insert %s refused; reading its version: %w", res, err)
		}
	case "upsert":
		// It conflicted, so the row exists, with a newer version committed
		// while the upsert waited.
		return staleFromReread(ctx, db, t.readSQL, key, res, tok)
	default: // update
		if !visible {
			return fmt.Errorf("%w: %s", ErrNoRow, res)
		}
		// The row was changed or deleted while the update waited on its lock.
		err := staleFromReread(ctx, db, t.readSQL, key, res, tok)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s (deleted concurrently)", ErrNoRow, res)
		}
		return err
	}
}

// resource names a row in errors: table:key.
func (t *Table) resource(key any) string { return fmt.Sprintf("%s:%v", t.name, key) }
