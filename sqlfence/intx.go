package sqlfence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/backoff"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/pgsql"
	"github.com/fencekit/fencekit/internal/valid"
)

// Options configures a [Guard]. The zero value (and a nil *Options) means
// the server's default isolation level and no retries.
type Options struct {
	// IsoLevel is the isolation level of the transactions InTx begins; empty
	// means the server's default (normally READ COMMITTED, which is enough
	// for the guard row: see the package documentation). It needs a
	// *pgx.Conn or *pgxpool.Pool: a pgx.Tx's savepoint cannot change it.
	IsoLevel pgx.TxIsoLevel
	// MaxRetries bounds how many times InTx re-runs the whole transaction
	// (claim and fn) after a serialization failure (SQLSTATE 40001) or a
	// deadlock (40P01) when IsoLevel is RepeatableRead or Serializable.
	// Zero means 5 at those levels; negative is an error.
	// At other levels nothing is retried.
	MaxRetries int
	// MeterProvider counts the refused writes of the Guard's InTx, Exec
	// and Claim (fencekit_stale_rejected); default otel.GetMeterProvider().
	// The package-level functions, [Table] and stdsql count on the global
	// provider, registered on their first call.
	MeterProvider metric.MeterProvider
}

// defaultMaxRetries is the retry bound used when Options.MaxRetries is zero
// and the isolation level can fail with serialization errors.
const defaultMaxRetries = 5

// Guard runs fenced transactions with fixed [Options]. Its methods are safe
// for concurrent use. The package-level [InTx] uses a Guard with defaults.
type Guard struct {
	opts    pgx.TxOptions
	retries int          // attempts after the first
	stale   *obs.Counter // nil: the global provider's (obs.From)
}

var defaultGuard = &Guard{}

// New returns a Guard for opts (nil means defaults). It returns an error
// naming the field when IsoLevel is not one of pgx's four levels or
// MaxRetries is negative.
func New(opts *Options) (*Guard, error) {
	g := &Guard{}
	if opts == nil {
		return g, nil
	}
	if opts.MeterProvider != nil {
		g.stale = obs.For(opts.MeterProvider)
	}
	switch opts.IsoLevel {
	case "", pgx.ReadUncommitted, pgx.ReadCommitted:
	case pgx.RepeatableRead, pgx.Serializable:
		g.retries = defaultMaxRetries
	default:
		return nil, valid.Invalid("sqlfence: Options.IsoLevel %q: want empty or one of pgx.ReadUncommitted, pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable", opts.IsoLevel)
	}
	switch {
	case opts.MaxRetries < 0:
		return nil, valid.Invalid("sqlfence: Options.MaxRetries is %d; want 0 (default) or more", opts.MaxRetries)
	case opts.MaxRetries > 0 && g.retries > 0:
		g.retries = opts.MaxRetries
	}
	g.opts.IsoLevel = opts.IsoLevel
	return g, nil
}

// InTx runs fn in one transaction that first claims resource's guard row
// with tok (see [Claim]); it returns a *fence.StaleError (and runs nothing)
// when a newer token was seen. It uses the server's default isolation level
// and does not retry; use [New] for other options. Round trips and errors
// are those of [Guard.InTx].
func InTx(ctx context.Context, db TxBeginner, resource string, tok fence.Token, fn func(pgx.Tx) error) error {
	return defaultGuard.InTx(ctx, db, resource, tok, fn)
}

// InTx begins a transaction on db, claims resource's guard row with tok,
// runs fn with the transaction and commits. The claim holds the guard row's
// lock until commit, so fenced transactions on one resource never
// interleave: a newer holder's claim waits, and an older holder's claim
// waits and then fails. When db is a pgx.Tx the transaction is a savepoint
// in it and becomes durable only when the caller commits.
//
// Cost: the caller's statements plus two round trips, as for the same
// unfenced transaction: on a *pgx.Conn or *pgxpool.Pool the claim travels
// in the BEGIN's message, and COMMIT, which travels with the check that fn
// left the transaction open. On a pgx.Tx the savepoint, the claim, the
// check and the savepoint's release are a round trip each.
//
// When fn returns an error the transaction is rolled back and that error is
// returned, wrapped once with InTx's resource and token (wrapping also ctx's cause when ctx has ended, see below). With IsoLevel RepeatableRead or Serializable, a
// serialization failure or deadlock (from the claim, fn or commit) rolls
// back and re-runs the whole transaction, up to MaxRetries times, so fn must
// have no effects outside the transaction; the final error joins the last
// failure with ctx's error when ctx ended the retries.
//
// fn must leave the transaction open: when it ends it itself (COMMIT,
// ROLLBACK, tx.Commit, or on a pgx.Tx a ROLLBACK TO SAVEPOINT made before
// the claim), the claim ends with it, and InTx returns an error saying "fn
// ended the transaction" and commits nothing more; statements fn ran after
// that were not fenced (see docs/postgres.md). The COMMIT (on a pgx.Tx, a
// statement before the savepoint's release) checks a marker that the claim
// set and that ends with it.
//
// Errors: a [*fence.StaleError] (fn not called, nothing changed; on a
// pgx.Tx, or a Querier of your own that may wrap one, InTx also makes the
// caller's transaction fail, as [Claim] does, so that its Commit returns
// pgx.ErrTxCommitRollback: roll it back; so does any other failure of the
// claim there, such as a serialization failure at REPEATABLE READ, and
// fn's error when it wraps a refusal); pgx.ErrTxCommitRollback when
// fn ignored a failed statement (on a pgx.Tx the caller's transaction
// fails too: the statement may have been a refused Claim or Exec);
// [fence.ErrInvalid] for a nil db or fn, a bad token or resource (nothing
// sent), also for a *pgx.Conn or *pgxpool.Conn inside a transaction (pass
// the pgx.Tx of its Begin, or use Claim in it); an error for an isolation level requested on a pgx.Tx; ctx's error (nothing sent when ctx is already
// done); PostgreSQL's errors. Once ctx has ended, every error also wraps
// context.Cause(ctx): with a lease's Context, a transaction cut off by the
// lost lease matches lease.ErrLost and fence.ErrFencedOut.
func (g *Guard) InTx(ctx context.Context, db TxBeginner, resource string, tok fence.Token, fn func(pgx.Tx) error) error {
	if err := checkArgs(ctx, db, resource, tok); err != nil {
		return err
	}
	if fn == nil {
		return valid.Invalid("sqlfence: InTx(%q): nil fn", resource)
	}
	if connInTx(db) { // its BEGIN would only warn, and InTx would commit the caller's transaction
		return errConnInTx("InTx", resource)
	}
	_, canSetLevel := db.(txOptionsBeginner)
	if g.opts.IsoLevel != "" && !canSetLevel {
		return valid.Invalid("sqlfence: InTx(%q): isolation level %s needs a *pgx.Conn or *pgxpool.Pool; a %T's level is its outer transaction's", resource, g.opts.IsoLevel, db)
	}
	ctx = g.count(ctx)
	var err error
	for attempt := 0; ; attempt++ {
		err = g.once(ctx, db, resource, tok, fn)
		if err == nil || attempt >= g.retries || !retryable(err) {
			return cause.With(ctx, err)
		}
		if werr := backoff.Sleep(ctx, backoff.Delay(time.Millisecond, attempt+1, 256*time.Millisecond)); werr != nil {
			return cause.With(ctx, errors.Join(fmt.Errorf("%w (gave up retrying after %d attempts)", err, attempt+1), werr))
		}
	}
}

// txErr names InTx, its resource and its token once in err, a step's
// error ("begin: ", "commit: ") or fn's own ("").
func txErr(resource string, tok fence.Token, step string, err error) error {
	return fmt.Errorf("sqlfence: InTx(%q) with token %s: %s%w", resource, tok, step, err)
}

// once runs one attempt: begin and claim, fn, commit.
func (g *Guard) once(ctx context.Context, db TxBeginner, resource string, tok fence.Token, fn func(pgx.Tx) error) (err error) {
	var tx pgx.Tx
	switch db := db.(type) {
	case *pgxpool.Pool:
		c, err := db.Acquire(ctx)
		if err != nil {
			return txErr(resource, tok, "begin: ", err)
		}
		defer c.Release()
		return g.once(ctx, c.Conn(), resource, tok, fn)
	case *pgxpool.Conn:
		return g.once(ctx, db.Conn(), resource, tok, fn)
	case *pgx.Conn:
		mark := strconv.FormatUint(rand.Uint64(), 36)
		begin, err := beginClaim(ctx, db, g.opts.IsoLevel, mark, resource, tok)
		if err != nil {
			return txErr(resource, tok, "prepare the claim: ", err)
		}
		tx, err = db.BeginTx(ctx, pgx.TxOptions{BeginQuery: begin, CommitQuery: checkCommit(mark)})
		if err != nil {
			return beginClaimFailed(ctx, db, resource, tok, err)
		}
	default: // a pgx.Tx: a savepoint, then the claim
		if tx, err = db.Begin(ctx); err != nil {
			return txErr(resource, tok, "begin: ", err)
		}
	}
	committed, failed := false, false
	_, onConn := db.(*pgx.Conn)
	defer func() {
		// Also when fn panics: the panic continues after the rollback.
		if !committed {
			rollback(ctx, tx)
		}
		// On a pgx.Tx (or the caller's own handle, which may wrap one), a
		// refusal (InTx's claim, or one fn met) or a failed claim (a
		// serialization failure at REPEATABLE READ hides a refusal) makes
		// the caller's transaction fail, as Claim does, once the
		// savepoint's rollback has cleared it.
		if outer, ok := db.(Querier); ok && !onConn && (failed || errors.Is(err, fence.ErrStale)) {
			pgsql.AbortTx(ctx, pgxSender{outer})
		}
	}()
	mark := ""
	if !onConn {
		if mark, err = claimMarked(ctx, tx, resource, tok); err != nil {
			failed = true
			return err
		}
	}
	if err = fn(tx); err != nil {
		return txErr(resource, tok, "", err)
	}
	switch tx.Conn().PgConn().TxStatus() {
	case 'I':
		return errFnEnded(resource, tok)
	case 'E': // fn ignored a failed statement (perhaps a refusal): COMMIT would roll back
		failed = true
		return txErr(resource, tok, "fn ignored a failed statement (a refused Claim, Exec or Table write is one), so InTx rolled back: ", pgx.ErrTxCommitRollback)
	}
	if !onConn {
		// A savepoint: fn may have rolled back to it (or to one before
		// it), undoing the claim while the caller's transaction goes on.
		if _, err = tx.Exec(ctx, pgsql.ExecCheckSQL, mark); err != nil {
			if endedStatement(err) {
				return errFnEnded(resource, tok)
			}
			return txErr(resource, tok, "commit: ", err)
		}
	}
	if err = tx.Commit(ctx); err != nil {
		if endedByFn(err) {
			return errFnEnded(resource, tok)
		}
		return txErr(resource, tok, "commit: ", err)
	}
	committed = true
	return nil
}

// claimMarked claims resource's guard row in tx (a savepoint) and marks
// the savepoint with a random value (pgsql.ClaimMarkSQL), which it returns.
// A ROLLBACK TO SAVEPOINT that undoes the claim also undoes the mark, so
// pgsql.ExecCheckSQL finds it only while the claim stands.
func claimMarked(ctx context.Context, tx pgx.Tx, resource string, tok fence.Token) (string, error) {
	mark := strconv.FormatUint(rand.Uint64(), 36)
	var claimed bool
	var cur int64
	var set string
	s := pgxSender{tx}
	found, err := s.Row(ctx, pgsql.ClaimMarkSQL, []any{resource, int64(tok), mark}, &claimed, &cur, &set)
	return mark, pgsql.Claimed(ctx, s, "sqlfence", resource, tok, found && claimed, cur, err)
}

// checkCommit is the COMMIT of InTx's transaction on a connection
// (pgsql.CheckCommit): when fn ended InTx's transaction and began another
// (COMMIT; BEGIN, COMMIT AND CHAIN), COMMIT never runs, and pgx closes the
// connection, which rolls fn's transaction back.
func checkCommit(mark string) string { return pgsql.CheckCommit(mark) }

const endedText = pgsql.EndedText

// endedByFn reports whether a failed commit found InTx's transaction (or
// savepoint) ended by fn: pgx's tx closed (fn called its Commit or
// Rollback), checkCommit's refusal, or a savepoint that no longer exists
// (25P01 outside any transaction, 3B001 in another one).
func endedByFn(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, pgx.ErrTxClosed) ||
		errors.As(err, &pe) && (pe.Code == "22P02" && strings.Contains(pe.Message, endedText) ||
			pe.Code == "25P01" || pe.Code == "3B001")
}

// errFnEnded is InTx's error when fn ended the transaction itself: what fn
// wrote after that was not fenced.
func errFnEnded(resource string, tok fence.Token) error {
	return fmt.Errorf("sqlfence: InTx(%q) with token %s: %s (COMMIT, ROLLBACK, tx.Commit, or on a pgx.Tx a ROLLBACK TO SAVEPOINT, inside fn): InTx committed nothing more, and fn's later statements ran unfenced", resource, tok, endedText)
}

// beginClaim is the BEGIN of InTx's transaction on conn, the marker that
// checkCommit looks for (mark: letters and digits) and the claim, in one
// simple-protocol message (one round trip). Unlike pgsql.ClaimSQL,
// it cannot return the refusal as a row (pgx's BeginTx reads no rows): a
// refused claim sets the token to NULL, which the NOT NULL column rejects
// with SQLSTATE 23502, and beginClaimFailed turns that into the stale
// error.
//
// When conn prepares statements (pgx's default query mode, cache
// statement), the claim is the prepared statement lockClaimSQL, run by
// EXECUTE: the server neither parses nor plans it per transaction. In the
// other modes (those for PgBouncer in transaction pooling mode, where a
// session's prepared statements are not there) the claim is pgsql.UpsertClaim
// as text, which the server parses and plans faster than lockClaimSQL's
// text. A simple-protocol message carries no parameters: resource is a
// string literal escaped by pgconn (EscapeString, which needs the server's
// standard_conforming_strings on, its default), tok a decimal number.
func beginClaim(ctx context.Context, conn *pgx.Conn, level pgx.TxIsoLevel, mark, resource string, tok fence.Token) (string, error) {
	esc, err := conn.PgConn().EscapeString(resource)
	if err != nil {
		return "", err
	}
	lit := "'" + esc + "'"
	if !prepares(conn) {
		return pgsql.BeginClaim(string(level), mark, pgsql.UpsertClaim(lit, tok)), nil
	}
	if _, err := conn.Prepare(ctx, lockClaimName, lockClaimSQL); err != nil {
		return "", err
	}
	claim := "EXECUTE " + lockClaimName + "(" + lit + ", " + strconv.FormatUint(uint64(tok), 10) + ")"
	return pgsql.BeginClaim(string(level), mark, claim), nil
}

// prepares reports whether conn prepares statements (pgx's default query
// mode), remembered in the connection's CustomData: conn.Config() copies
// the whole configuration, a few percent of InTx's client time.
func prepares(conn *pgx.Conn) bool {
	data := conn.PgConn().CustomData()
	p, ok := data[preparesKey].(bool)
	if !ok {
		p = conn.Config().DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
		data[preparesKey] = p
	}
	return p
}

const preparesKey = "fencekit/sqlfence: prepares"

// lockClaimSQL is pgsql.UpsertClaim's claim for $1 and $2 that, when the row
// already holds the token (a holder writing again, the usual case), only
// locks the row (FOR NO KEY UPDATE, the lock the upsert takes) and writes
// no new row version. Under READ COMMITTED a lock that had to wait
// re-checks token = $2 against the row's newest version: if a newer token
// was committed meanwhile the check fails, and the upsert refuses with that
// token; under REPEATABLE READ and SERIALIZABLE that wait fails with
// SQLSTATE 40001 instead (retried by Guard.InTx).
const lockClaimSQL = "INSERT INTO fencekit_tokens AS t (resource, token) SELECT $1::text, $2::bigint" +
	" WHERE NOT EXISTS (SELECT FROM fencekit_tokens WHERE resource = $1 AND token = $2 FOR NO KEY UPDATE)" +
	pgsql.UpsertAction

// lockClaimName is lockClaimSQL's prepared statement.
const lockClaimName = "fencekit_intx_claim_1"

// rollbackOpen rolls back the transaction left open on conn, if any
// (closing conn when the ROLLBACK fails: the server rolls back then).
func rollbackOpen(ctx context.Context, conn *pgx.Conn) {
	if conn.PgConn().TxStatus() == 'I' || conn.IsClosed() {
		return
	}
	rctx, cancel := pgsql.Detached(ctx)
	defer cancel()
	if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
		conn.Close(rctx)
	}
}

// beginClaimFailed handles an error of beginClaim's message on conn: it
// rolls back the transaction the BEGIN left open (aborted), and turns a
// refused claim into a *fence.StaleError, re-reading the current token
// (two round trips, only on this path).
func beginClaimFailed(ctx context.Context, conn *pgx.Conn, resource string, tok fence.Token, err error) error {
	rollbackOpen(ctx, conn)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23502" && pe.TableName == "fencekit_tokens" {
		return pgsql.StaleFromReread(ctx, pgxSender{conn}, "sqlfence", resource, tok)
	}
	return txErr(resource, tok, "begin and claim: ", err)
}

// rollback ends tx even when ctx is already done, so that a pooled
// connection goes back clean; if it fails, pgx closes the connection and the
// server aborts the transaction.
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := pgsql.Detached(ctx)
	defer cancel()
	_ = tx.Rollback(rctx)
}

// retryable reports a serialization failure or deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}
