// Package pgsql is what sqlfence (pgx) and sqlfence/stdsql (database/sql)
// share: the SQL text of the guard-row claim and of row mode, identifier
// quoting, and the decisions made on a statement's result (claimed or
// stale, stale or missing row), with their errors and the
// fencekit_stale_rejected count. The two packages differ only in how a
// statement is sent: each wraps its handle in a [Sender].
package pgsql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/valid"
)

// Sender sends one statement on a driver's handle.
type Sender interface {
	// Row runs sql with args and scans its first row into dest; found is
	// false (and err nil) when there is no row.
	Row(ctx context.Context, sql string, args []any, dest ...any) (found bool, err error)
	// Exec runs sql with args and returns the number of rows it changed.
	Exec(ctx context.Context, sql string, args []any) (int64, error)
}

// ClaimInsert takes resource $1's guard row for token $2 unless it holds a
// newer token, returning the token when it did.
const ClaimInsert = `
	INSERT INTO fencekit_tokens AS t (resource, token) VALUES ($1, $2)
	ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token,
		updated_at = CASE WHEN t.token < EXCLUDED.token THEN now() ELSE t.updated_at END
	WHERE t.token <= EXCLUDED.token
	RETURNING t.token
`

// ClaimSQL claims resource's guard row for token $2 in one statement. The
// CTE either returns the claimed row (claimed = true) or, when the row holds
// a newer token and the WHERE refused the update, the row as this
// statement's snapshot saw it (claimed = false), so a stale claim learns the
// current token in the same round trip. ON CONFLICT locks the conflicting row
// even when its WHERE is false, so the row cannot change until this
// transaction ends.
const ClaimSQL = `WITH claimed AS (` + ClaimInsert + `)
SELECT true, token FROM claimed
UNION ALL
SELECT false, token FROM fencekit_tokens WHERE resource = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`

// ClaimMarkSQL is ClaimSQL that also adds $3 to the marks in
// [ExecMarker], transaction-locally (its third column), for [ExecCheckSQL]
// to find. It adds rather than replaces, so that fenced calls nested in
// one transaction (an Exec inside an InTx on a pgx.Tx) keep each other's
// marks.
const ClaimMarkSQL = `WITH claimed AS (` + ClaimInsert + `)
SELECT true, token, ` + AddMark + ` FROM claimed
UNION ALL
SELECT false, token, '' FROM fencekit_tokens WHERE resource = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`

// AddMark adds the mark $3 to [ExecMarker], transaction-locally.
const AddMark = `set_config('` + ExecMarker + `', coalesce(current_setting('` + ExecMarker + `', true), '') || ' ' || $3, true)`

// AbortSQL fails (SQLSTATE 22P02), aborting the transaction it runs in so
// that its COMMIT rolls back.
const AbortSQL = `SELECT 'fencekit: a claim in this transaction was refused as stale; roll it back'::int`

// AbortTx sends AbortSQL through s, which runs in the caller's transaction
// after a claim in it was refused: a caller that ignores the refusal and
// commits then writes nothing. Its error is the point and is dropped; it
// is sent even when ctx has ended.
func AbortTx(ctx context.Context, s Sender) {
	actx, cancel := Detached(ctx)
	defer cancel()
	_, _ = s.Exec(actx, AbortSQL, nil)
}

// Detached is ctx without its end, bounded to 5 s: for the statements
// that must reach the server even after the caller's ctx ended (a
// rollback, the read that reports a refusal, the statement that fails a
// refused transaction).
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}

// CurrentSQL reads resource's guard token with a fresh snapshot.
const CurrentSQL = `SELECT token FROM fencekit_tokens WHERE resource = $1`

// ExecMarker is the setting that marks a claim's transaction.
const ExecMarker = "fencekit.exec"

// ExecCheckSQL fails (SQLSTATE 22P02, ExecEndedText in the message) when
// ExecMarker no longer holds the mark $1 that a claim added: the
// transaction ended (a COMMIT in a procedure or a DO block, or between
// statements of a simple-protocol query), or rolled back to a savepoint
// made before the claim. The failure rolls back what ran after that.
const ExecCheckSQL = `SELECT (CASE WHEN position(' ' || $1 || ' ' in current_setting('` + ExecMarker + `', true) || ' ') > 0 THEN '1' ELSE '` + ExecEndedText + `' END)::int`

// ExecEndedText is in ExecCheckSQL's error.
const ExecEndedText = "fencekit: the statement ended the fenced transaction"

// Marker is the setting that marks an InTx transaction begun by BeginClaim.
const Marker = "fencekit.intx"

// EndedText is in CheckCommit's error.
const EndedText = "fn ended the transaction"

// CheckCommit is the COMMIT of a transaction begun by [BeginClaim], in one
// simple-protocol message with a check that fails (SQLSTATE 22P02, with
// EndedText in the message) unless the transaction is the one BeginClaim
// began: it set Marker, transaction-locally, to mark, a random value no
// other transaction has, and PostgreSQL resets it when the transaction
// ends. So when the caller's statements ended that transaction and began
// another, COMMIT never runs.
func CheckCommit(mark string) string {
	return "SELECT (CASE WHEN current_setting('" + Marker + "', true) = '" + mark + "' THEN '1' ELSE '" +
		EndedText + "' END)::int; COMMIT"
}

// BeginClaim is a simple-protocol message (no arguments, one round trip):
// BEGIN (at level, when not empty), Marker set to mark (letters and digits),
// then claim, a statement from [UpsertClaim] or one that runs it.
func BeginClaim(level, mark, claim string) string {
	var b strings.Builder
	b.WriteString("BEGIN")
	if level != "" {
		b.WriteString(" ISOLATION LEVEL " + level)
	}
	b.WriteString("; SET LOCAL " + Marker + " = '" + mark + "'; ")
	b.WriteString(claim)
	return b.String()
}

// Literal returns s as an E'...' string literal, its backslashes and quotes
// escaped, for a driver that offers no escaping of its own (stdsql). s must
// hold no NUL byte (valid.Name refuses them).
func Literal(s string) string {
	var b strings.Builder
	b.WriteString("E'")
	for _, c := range []byte(s) {
		if c == '\\' || c == '\'' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

// UpsertClaim claims resource's guard row for token tok: it inserts the row
// or, on conflict, stores tok when it is not older than the stored token and
// NULL when it is (the refusal, SQLSTATE 23502 from the NOT NULL column).
// updated_at changes only with the token. ON CONFLICT locks the row (and,
// under READ COMMITTED, decides on its newest version), so the claim holds
// the row until the transaction ends. resource is a string literal (see
// Literal).
func UpsertClaim(resource string, tok fence.Token) string {
	return "INSERT INTO fencekit_tokens AS t (resource, token) VALUES (" + resource + ", " +
		strconv.FormatUint(uint64(tok), 10) + ")" + UpsertAction
}

// UpsertAction is UpsertClaim's ON CONFLICT clause.
const UpsertAction = " ON CONFLICT (resource) DO UPDATE SET" +
	" token = CASE WHEN t.token <= EXCLUDED.token THEN EXCLUDED.token END," +
	" updated_at = CASE WHEN t.token < EXCLUDED.token THEN now() ELSE t.updated_at END"

// Claim runs ClaimSQL through s and turns a refusal into a
// *fence.StaleError. pkg starts error messages.
func Claim(ctx context.Context, s Sender, pkg, resource string, tok fence.Token) error {
	var claimed bool
	var cur int64
	found, err := s.Row(ctx, ClaimSQL, []any{resource, int64(tok)}, &claimed, &cur)
	return Claimed(ctx, s, pkg, resource, tok, found && claimed, cur, err)
}

// Claimed decides on the result of a claim statement ([ClaimSQL],
// [ClaimMarkSQL]): nil when it claimed, a *fence.StaleError when it was
// refused, err (wrapped) when it failed.
func Claimed(ctx context.Context, s Sender, pkg, resource string, tok fence.Token, claimed bool, cur int64, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: claim %q with token %s: %w", pkg, resource, tok, err)
	case claimed:
		return nil
	case fence.Check(resource, tok, fence.Token(cur)) != nil:
		return StaleError(ctx, resource, tok, fence.Token(cur))
	default:
		// Refused, but the statement's snapshot predates the newer token
		// (it was committed while the claim waited on the row lock, or the
		// row was inserted then; or there was no row). The row is locked
		// by this transaction now, or committed for good in autocommit:
		// re-read it.
		return StaleFromReread(ctx, s, pkg, resource, tok)
	}
}

// StaleFromReread re-reads resource's token in a new statement, which sees
// what was committed while a refused claim waited, and returns the stale
// error it explains. The read is sent even when ctx has ended (the claim
// waited on a newer holder, whose lease may have ended ctx's): a refusal
// reported as ctx's error would not make the caller's transaction fail.
func StaleFromReread(ctx context.Context, s Sender, pkg, resource string, tok fence.Token) error {
	rctx, cancel := Detached(ctx)
	defer cancel()
	var cur int64
	found, err := s.Row(rctx, CurrentSQL, []any{resource}, &cur)
	if err == nil && !found {
		err = errors.New("no guard row")
	}
	if err != nil {
		return fmt.Errorf("%s: %q refused token %s; reading the current token: %w", pkg, resource, tok, err)
	}
	if fence.Check(resource, tok, fence.Token(cur)) == nil {
		// Cannot happen while the row lock is held; say so rather than
		// pretend the write was stale.
		return fmt.Errorf("%s: %q refused token %s but holds token %d; retry", pkg, resource, tok, cur)
	}
	return StaleError(ctx, resource, tok, fence.Token(cur))
}

// StaleError counts a refused write (fencekit_stale_rejected, store
// postgres, on ctx's counter: obs.From) and returns its error.
func StaleError(ctx context.Context, resource string, tok, cur fence.Token) error {
	obs.From(ctx).Add(obs.StorePostgres)
	return &fence.StaleError{Resource: resource, Presented: tok, Current: cur}
}

// CheckArgs validates what every guard call checks before sending
// anything: the handle (nilDB is the caller's error for a nil one), the
// resource and the token (valid.Write), then ctx. It allocates
// nothing on success. It registers ctx's counter (obs.From) on first use,
// so that its series are exported before the first refusal.
func CheckArgs(ctx context.Context, pkg string, isNil bool, nilDB error, resource string, tok fence.Token) error {
	obs.From(ctx)
	if isNil {
		return nilDB
	}
	if err := valid.Write("resource", resource, tok); err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: resource %q: %w", pkg, resource, cause.With(ctx, err))
	}
	return nil
}

// SQLState returns err's SQLSTATE code when err (or one it wraps) has one:
// pgx's *pgconn.PgError and lib/pq's *pq.Error both have a SQLState method.
func SQLState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}
