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
//
// An unbound Table is its own fence: it compares each row's version with
// the token and knows nothing of [InTx]'s guard rows. To write rows that
// InTx transactions of a resource also write, bind the table to that
// resource with [Table.WithGuard].
type Table struct {
	name    string // as given, for errors
	columns int
	guarded bool   // made by WithGuard
	guard   string // the guard row's resource; empty only when WithGuard got ""

	// Quoted names, to build the guarded statements from.
	t, k, v string
	cols    []string

	updateSQL string
	insertSQL string
	upsertSQL string
	claimSQL  string
	readSQL   string // the row's version: $1 key
	whySQL    string // guarded: the guard's token and the row's version: $1 key, $2 resource
}

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
		return nil, fence.Invalid("sqlfence: version column %q is named twice (also the %s)", versionColumn, prev)
	}
	seen[versionColumn] = "version column"
	cols := make([]string, len(columns))
	for i, c := range columns {
		id, err := parseIdent("column "+strconv.Itoa(i+1), c, false)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c]; dup {
			return nil, fence.Invalid("sqlfence: column %d %q is named twice (also the %s)", i+1, c, prev)
		}
		seen[c] = "column " + strconv.Itoa(i+1)
		cols[i] = id.Sanitize()
	}
	t, k, v := tid.Sanitize(), key.Sanitize(), ver.Sanitize()
	return &Table{
		name:      table,
		columns:   len(columns),
		t:         t,
		k:         k,
		v:         v,
		cols:      cols,
		updateSQL: buildUpdate(t, k, v, cols, ""),
		insertSQL: buildInsert(t, k, v, cols, "", ""),
		upsertSQL: buildInsert(t, k, v, cols, buildUpsertAction(k, v, cols), ""),
		claimSQL:  buildClaim(t, k, v, cols, ""),
		readSQL:   "SELECT COALESCE(" + v + ", 0) FROM " + t + " WHERE " + k + " = $1",
	}, nil
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
// transactions do. The claim happens even when the row then refuses the
// write (a newer version, or a missing row): the guard only ever moves to a
// token that was presented, which shuts out older holders only.
// A refusal names the guard's resource when the guard refused, and
// "table:key" when the row did. WithGuard sends nothing; a resource
// [fence.ValidateName] refuses makes every write of the copy fail, sending
// nothing. On a nil *Table it returns nil.
func (t *Table) WithGuard(resource string) *Table {
	if t == nil {
		return nil
	}
	g := *t
	g.guarded, g.guard = true, resource
	claim := guardClaim(len(t.cols) + 3)
	g.updateSQL = buildUpdate(t.t, t.k, t.v, t.cols, claim)
	g.insertSQL = buildInsert(t.t, t.k, t.v, t.cols, "", claim)
	g.upsertSQL = buildInsert(t.t, t.k, t.v, t.cols, buildUpsertAction(t.k, t.v, t.cols), claim)
	g.claimSQL = buildClaim(t.t, t.k, t.v, t.cols, guardClaim(3))
	g.whySQL = "SELECT (SELECT token FROM fencekit_tokens WHERE resource = $2), " +
		"(SELECT COALESCE(" + t.v + ", 0) FROM " + t.t + " WHERE " + t.k + " = $1)"
	return &g
}

// guardClaim is the WITH item that claims the guard row of resource $n for
// token $2, as claimSQL does; the write it precedes runs only when the claim
// returned a row. The write's condition on it is an uncorrelated subquery,
// which PostgreSQL's plan evaluates once, before the write's scan (EXPLAIN:
// a one-time filter), so the guard row is locked before the user's row, in
// the order InTx locks them. Were a plan to lock them the other way, the
// cost would be a deadlock error (40P01) against a concurrent InTx, never a
// wrong write; TestRaceMixedModes would report it.
func guardClaim(n int) string {
	return "WITH fencekit_claim AS (INSERT INTO fencekit_tokens AS fencekit_guard (resource, token) VALUES ($" +
		strconv.Itoa(n) + ", $2) ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token, " +
		"updated_at = CASE WHEN fencekit_guard.token < EXCLUDED.token THEN now() ELSE fencekit_guard.updated_at END " +
		"WHERE fencekit_guard.token <= EXCLUDED.token RETURNING 1)\n"
}

// claimed is the condition that ties a guarded write to its claim.
const claimed = "EXISTS (SELECT 1 FROM fencekit_claim)"

// buildUpdate returns the fenced update: $1 key, $2 token, $3... values; with
// claim (guardClaim), also the guard's resource after the values.
func buildUpdate(t, k, v string, cols []string, claim string) string {
	var b strings.Builder
	b.WriteString(claim + "UPDATE " + t + " SET " + v + " = $2")
	for i, c := range cols {
		b.WriteString(", " + c + " = $" + strconv.Itoa(i+3))
	}
	b.WriteString(" WHERE " + k + " = $1 AND COALESCE(" + v + ", 0) <= $2")
	if claim != "" {
		b.WriteString(" AND " + claimed)
	}
	return b.String()
}

// buildClaim returns the claim at read: $1 key, $2 token; with claim
// (guardClaim), also the guard's resource, $3. It returns the version and
// the columns.
func buildClaim(t, k, v string, cols []string, claim string) string {
	var b strings.Builder
	b.WriteString(claim + "UPDATE " + t + " SET " + v + " = $2 WHERE " + k + " = $1 AND COALESCE(" + v + ", 0) <= $2")
	if claim != "" {
		b.WriteString(" AND " + claimed)
	}
	b.WriteString(" RETURNING " + v)
	for _, c := range cols {
		b.WriteString(", " + c)
	}
	return b.String()
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
// ON CONFLICT action of the upsert. With claim, as in buildUpdate.
func buildInsert(t, k, v string, cols []string, action, claim string) string {
	var b strings.Builder
	if action == "" {
		action = "DO NOTHING"
	}
	b.WriteString(claim + "INSERT INTO " + t + " AS fencekit_row (" + k + ", " + v)
	for _, c := range cols {
		b.WriteString(", " + c)
	}
	if claim == "" {
		b.WriteString(") VALUES ($1, $2")
	} else {
		b.WriteString(") SELECT $1, $2")
	}
	for i := range cols {
		b.WriteString(", $" + strconv.Itoa(i+3))
	}
	if claim == "" {
		b.WriteString(")")
	} else {
		b.WriteString(" WHERE " + claimed)
	}
	b.WriteString(" ON CONFLICT (" + k + ") " + action)
	return b.String()
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
// the row's version (nothing changed), or, for a table bound by
// [Table.WithGuard], the guard's resource and token; [ErrNoRow] when no row
// has the key; [fence.ErrInvalid] for a nil table or db, a zero token or
// one above [fence.MaxToken], a wrong number of values or a bad guard
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
	if err := t.checkWrite(ctx, db, "claim", key, tok, len(dest), "destinations"); err != nil {
		return err
	}
	args := []any{key, int64(tok)}
	if t.guarded {
		args = append(args, t.guard)
	}
	var ver int64
	err := db.QueryRow(ctx, t.claimSQL, args...).Scan(append([]any{&ver}, dest...)...)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return t.refused(ctx, db, "claim", key, tok)
	case err != nil:
		return fmt.Errorf("sqlfence: claim %s with token %s: %w", t.resource(key), tok, withCause(ctx, err))
	}
	return nil
}

// Version returns the row's version (0 for a NULL version). One round trip.
//
// Errors: [ErrNoRow] when no row has the key; [fence.ErrInvalid] for a nil
// table or db; ctx's error (nothing sent when ctx is already done);
// PostgreSQL's errors.
func (t *Table) Version(ctx context.Context, db Querier, key any) (fence.Token, error) {
	switch {
	case t == nil:
		return 0, errNilTable
	case isNil(db):
		return 0, errNilDB
	}
	res := t.resource(key)
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sqlfence: version of %s: %w", res, withCause(ctx, err))
	}
	var v int64
	err := db.QueryRow(ctx, t.readSQL, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s", ErrNoRow, res)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlfence: version of %s: %w", res, withCause(ctx, err))
	}
	return fence.Token(v), nil
}

// write runs op ("update", "insert" or "upsert") after checking its input.
func (t *Table) write(ctx context.Context, db Querier, op string, key any, tok fence.Token, values []any) error {
	if err := t.checkWrite(ctx, db, op, key, tok, len(values), "values"); err != nil {
		return err
	}
	args := make([]any, 0, 3+len(values))
	args = append(args, key, int64(tok))
	args = append(args, values...)
	if t.guarded {
		args = append(args, t.guard)
	}
	sql := t.upsertSQL
	switch op {
	case "update":
		sql = t.updateSQL
	case "insert":
		sql = t.insertSQL
	}
	tag, err := db.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("sqlfence: %s %s with token %s: %w", op, t.resource(key), tok, withCause(ctx, err))
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	return t.refused(ctx, db, op, key, tok)
}

// refused explains a write that changed no row, with a second statement:
// under READ COMMITTED it sees what was committed up to now, including what
// the refused statement waited for.
func (t *Table) refused(ctx context.Context, db Querier, op string, key any, tok fence.Token) error {
	res := t.resource(key)
	var guard, ver *int64 // nil: no guard row, no row
	var err error
	if t.guarded {
		err = db.QueryRow(ctx, t.whySQL, key, t.guard).Scan(&guard, &ver)
	} else {
		err = db.QueryRow(ctx, t.readSQL, key).Scan(&ver)
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("sqlfence: %s %s refused token %s; reading why: %w", op, res, tok, withCause(ctx, err))
	}
	switch {
	case guard != nil && fence.IsStale(tok, fence.Token(*guard)):
		return staleError(ctx, t.guard, tok, fence.Token(*guard))
	case ver != nil && fence.IsStale(tok, fence.Token(*ver)):
		return staleError(ctx, res, tok, fence.Token(*ver))
	case op == "insert" && ver != nil:
		return fmt.Errorf("%w: %s has version %d", ErrRowExists, res, *ver)
	case op == "insert":
		return fmt.Errorf("%w: %s (inserted and deleted concurrently)", ErrRowExists, res)
	case (op == "update" || op == "claim") && ver == nil:
		return fmt.Errorf("%w: %s", ErrNoRow, res)
	default:
		// The row was deleted, or deleted and inserted again, while the
		// write waited for it: nothing says the write is stale.
		return fmt.Errorf("sqlfence: %s %s refused token %s while the row changed under it; retry", op, res, tok)
	}
}

// resource names a row in errors: table:key.
// errNilTable is what the methods of a nil *Table return.
var errNilTable = fence.Invalid("sqlfence: nil *sqlfence.Table (NewTable returned an error)")

// checkWrite validates what op sends before sending it: the table, the
// handle, the token, the number of values (or Claim's destinations: what),
// the guard resource, then ctx.
func (t *Table) checkWrite(ctx context.Context, db Querier, op string, key any, tok fence.Token, n int, what string) error {
	switch {
	case t == nil:
		return errNilTable
	case isNil(db):
		return errNilDB
	}
	err := tok.Validate()
	switch {
	case err != nil:
	case n != t.columns:
		err = fence.Invalid("%d %s for %d columns", n, what, t.columns)
	case t.guarded:
		err = fence.ValidateName("WithGuard resource", t.guard)
	}
	if err != nil {
		return fmt.Errorf("sqlfence: %s %s: %w", op, t.resource(key), err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("sqlfence: %s %s with token %s: nothing sent: %w", op, t.resource(key), tok, withCause(ctx, ctx.Err()))
	}
	return nil
}

func (t *Table) resource(key any) string { return fmt.Sprintf("%s:%v", t.name, key) }
