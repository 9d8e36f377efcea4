package pgsql

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/valid"
)

// Pkg names the package a [Table]'s errors come from.
type Pkg struct {
	Name                   string // starts messages: "sqlfence"
	ErrNoRow, ErrRowExists error  // the package's sentinels
}

// Table is row mode's core: the statements of one table, built and
// validated once, and the decisions on their results. The driver packages
// check the handle before calling it.
type Table struct {
	pkg     *Pkg
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
// that writes set, in the order their values are passed. Its errors match
// fence.ErrInvalid and name the bad argument.
func NewTable(pkg *Pkg, table, keyColumn, versionColumn string, columns []string) (*Table, error) {
	t, err := ParseIdent(pkg.Name, "table", table, true)
	if err != nil {
		return nil, err
	}
	k, err := ParseIdent(pkg.Name, "key column", keyColumn, false)
	if err != nil {
		return nil, err
	}
	v, err := ParseIdent(pkg.Name, "version column", versionColumn, false)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{keyColumn: "key column"}
	if prev, dup := seen[versionColumn]; dup {
		return nil, valid.Invalid("%s: version column %q is named twice (also the %s)", pkg.Name, versionColumn, prev)
	}
	seen[versionColumn] = "version column"
	cols := make([]string, len(columns))
	for i, c := range columns {
		what := "column " + strconv.Itoa(i+1)
		if cols[i], err = ParseIdent(pkg.Name, what, c, false); err != nil {
			return nil, err
		}
		if prev, dup := seen[c]; dup {
			return nil, valid.Invalid("%s: column %d %q is named twice (also the %s)", pkg.Name, i+1, c, prev)
		}
		seen[c] = what
	}
	return &Table{
		pkg:       pkg,
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
// row, in the same statement as the row write.
func (t *Table) WithGuard(resource string) *Table {
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
// token $2, as ClaimSQL does; the write it precedes runs only when the claim
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

// Write runs op ("update", "insert" or "upsert") after checking its input.
func (t *Table) Write(ctx context.Context, s Sender, op string, key any, tok fence.Token, values []any) error {
	if err := t.check(ctx, op, key, tok, len(values), "values"); err != nil {
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
	n, err := s.Exec(ctx, sql, args)
	if err != nil {
		return fmt.Errorf("%s: %s %s with token %s: %w", t.pkg.Name, op, t.resource(key), tok, cause.With(ctx, err))
	}
	if n > 0 {
		return nil
	}
	return cause.With(ctx, t.refused(ctx, s, op, key, tok))
}

// Claim raises the row's version to tok and scans its columns into dest, in
// one statement.
func (t *Table) Claim(ctx context.Context, s Sender, key any, tok fence.Token, dest []any) error {
	if err := t.check(ctx, "claim", key, tok, len(dest), "destinations"); err != nil {
		return err
	}
	args := []any{key, int64(tok)}
	if t.guarded {
		args = append(args, t.guard)
	}
	var ver int64
	found, err := s.Row(ctx, t.claimSQL, args, append([]any{&ver}, dest...)...)
	switch {
	case err != nil:
		return fmt.Errorf("%s: claim %s with token %s: %w", t.pkg.Name, t.resource(key), tok, cause.With(ctx, err))
	case !found:
		return cause.With(ctx, t.refused(ctx, s, "claim", key, tok))
	}
	return nil
}

// Version reads the row's version (0 for a NULL version).
func (t *Table) Version(ctx context.Context, s Sender, key any) (fence.Token, error) {
	res := t.resource(key)
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%s: version of %s: %w", t.pkg.Name, res, cause.With(ctx, err))
	}
	var v int64
	found, err := s.Row(ctx, t.readSQL, []any{key}, &v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s: version of %s: %w", t.pkg.Name, res, cause.With(ctx, err))
	case !found:
		return 0, fmt.Errorf("%w: %s", t.pkg.ErrNoRow, res)
	}
	return fence.Token(v), nil
}

// refused explains a write that changed no row, with a second statement:
// under READ COMMITTED it sees what was committed up to now, including what
// the refused statement waited for. It is sent even when ctx has ended, as
// StaleFromReread's: a refusal must be reported as one.
func (t *Table) refused(ctx context.Context, s Sender, op string, key any, tok fence.Token) error {
	res := t.resource(key)
	rctx, cancel := Detached(ctx)
	defer cancel()
	var guard, ver *int64 // nil: no guard row, no row
	var err error
	if t.guarded {
		_, err = s.Row(rctx, t.whySQL, []any{key, t.guard}, &guard, &ver)
	} else {
		_, err = s.Row(rctx, t.readSQL, []any{key}, &ver)
	}
	if err != nil {
		return fmt.Errorf("%s: %s %s refused token %s; reading why: %w", t.pkg.Name, op, res, tok, cause.With(ctx, err))
	}
	switch {
	case guard != nil && fence.Check(t.guard, tok, fence.Token(*guard)) != nil:
		return StaleError(ctx, t.guard, tok, fence.Token(*guard))
	case ver != nil && fence.Check(res, tok, fence.Token(*ver)) != nil:
		return StaleError(ctx, res, tok, fence.Token(*ver))
	case op == "insert" && ver != nil:
		return fmt.Errorf("%w: %s has version %d", t.pkg.ErrRowExists, res, *ver)
	case op == "insert":
		return fmt.Errorf("%w: %s (inserted and deleted concurrently)", t.pkg.ErrRowExists, res)
	case (op == "update" || op == "claim") && ver == nil:
		return fmt.Errorf("%w: %s", t.pkg.ErrNoRow, res)
	default:
		// The row was deleted, or deleted and inserted again, while the
		// write waited for it: nothing says the write is stale.
		return fmt.Errorf("%s: %s %s refused token %s while the row changed under it; retry", t.pkg.Name, op, res, tok)
	}
}

// check validates what op sends before sending it: the token, the number
// of values (or Claim's destinations: what), the guard resource, then ctx.
func (t *Table) check(ctx context.Context, op string, key any, tok fence.Token, n int, what string) error {
	err := valid.Token(tok)
	switch {
	case err != nil:
	case n != t.columns:
		err = valid.Invalid("%d %s for %d columns", n, what, t.columns)
	case t.guarded:
		err = valid.Name("WithGuard resource", t.guard)
	}
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", t.pkg.Name, op, t.resource(key), err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s %s with token %s: nothing sent: %w", t.pkg.Name, op, t.resource(key), tok, cause.With(ctx, ctx.Err()))
	}
	return nil
}

// resource names a row in errors: table:key.
func (t *Table) resource(key any) string { return fmt.Sprintf("%s:%v", t.name, key) }
