package pglease

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// notifyChannel is the LISTEN/NOTIFY channel on which Release announces
// the row key ("<KeyPrefix>:<name>") of every released lease.
const notifyChannel = "fencekit_lease_released"

// New returns a lease client whose leases are rows of the table
// fencekit_leases (migrations/00000N_fencekit_leases*.up.sql, applied by
// fencekit's migrations) in the first schema of the pool's search_path.
// opts may be nil for the defaults; its KeyPrefix namespaces the rows
// ("<KeyPrefix>:<name>"). New sends nothing.
//
// Errors: an error wrapping [lease.ErrInvalid] for a nil pool or an invalid
// option.
func New(pool *pgxpool.Pool, opts *lease.Options) (*lease.Client, error) {
	if pool == nil {
		return nil, valid.Invalid("pglease: New: nil *pgxpool.Pool")
	}
	return lease.NewClient(tableBackend(pool, opts), opts)
}

// tableBackend is the table backend for pool and opts (nil: defaults).
func tableBackend(pool *pgxpool.Pool, opts *lease.Options) *backend {
	prefix := leasearg.DefaultKeyPrefix
	if opts != nil && opts.KeyPrefix != "" {
		prefix = opts.KeyPrefix
	}
	logger := slog.Default()
	if opts != nil && opts.Logger != nil {
		logger = opts.Logger
	}
	b := &backend{pool: pool, prefix: prefix, logger: logger}
	b.listener.b = b
	return b
}

// backend keeps leases in fencekit_leases: acquire, renew (a whole batch),
// release and inspect are one statement, one round trip, each.
type backend struct {
	pool     *pgxpool.Pool
	prefix   string
	listener listener // LISTEN connection shared by the Client's waiters (listen.go)
	logger   *slog.Logger
	noNotify sync.Once // logs that waiters poll (listen.go)
}

var _ lease.Backend = (*backend)(nil)

func (b *backend) key(name string) string { return b.prefix + ":" + name }

// acquireSQL grants the row if it is absent or expired, or else reads the
// holder, in one statement. The token is max(last token + 1, server time
// in µs) (nextToken), so tokens keep increasing when the row is lost
// (deleted, truncated, restored from an older dump) and stay comparable
// with redislease's, which use the same scheme. ON CONFLICT locks the row,
// so of two racing grants one waits and then sees the other's. When the
// refusal races with a grant that committed after the statement started,
// the holder part may read the row as it was before (expired, or no row):
// the refusal stands, with Holder 0 (unknown) and Remaining 0.
const acquireSQL = `
WITH granted AS (
    INSERT INTO fencekit_leases AS l (name, token, expires_at, identity)
    VALUES ($1, ` + nowUS + `, statement_timestamp() + $2 * interval '1 microsecond', $3)
    ON CONFLICT (name) DO UPDATE
        SET token = greatest(l.token + 1, ` + nowUS + `), expires_at = EXCLUDED.expires_at, identity = EXCLUDED.identity
        WHERE l.expires_at <= statement_timestamp()
    RETURNING token
)
SELECT true, token, 0::bigint, ''::text FROM granted
UNION ALL
SELECT false, CASE WHEN expires_at > statement_timestamp() THEN token ELSE 0 END, ` + remainingUS + `,
       CASE WHEN expires_at > statement_timestamp() THEN identity ELSE '' END
FROM fencekit_leases WHERE name = $1 AND NOT EXISTS (SELECT FROM granted)`

// nowUS is the server's time in microseconds since the Unix epoch.
const nowUS = `(extract(epoch FROM statement_timestamp()) * 1e6)::bigint`

// remainingUS is a row's remaining time in microseconds, 0 when expired.
const remainingUS = `CASE WHEN expires_at > statement_timestamp()
    THEN (extract(epoch FROM expires_at - statement_timestamp()) * 1e6)::bigint ELSE 0 END`

// Name is "postgres".
func (b *backend) Name() string { return "postgres" }

// Close has nothing to end: every goroutine the backend starts ends before
// the call that started it returns, or with the Watch that started it.
func (b *backend) Close(context.Context) error { return nil }

// Acquire grants name, one round trip (two on a connection's first use of
// the statement, which pgx prepares). Every grant's token is greater than
// the row's last one, durably (WAL), and than the server time in µs.
func (b *backend) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*lease.Grant, error) {
	rows, err := b.pool.Query(ctx, acquireSQL, b.key(name), ttl.Microseconds(), identity)
	if err != nil {
		return nil, err
	}
	granted, tok, remaining, holder := false, int64(0), int64(0), ""
	n := 0
	_, err = pgx.ForEachRow(rows, []any{&granted, &tok, &remaining, &holder}, func() error { n++; return nil })
	switch {
	case err != nil:
		return nil, err
	case n == 0: // refused, the holder's row not visible yet (see acquireSQL)
		return nil, &lease.NotAcquiredError{Name: name}
	case !granted:
		return nil, &lease.NotAcquiredError{Name: name, Holder: fence.Token(tok), Identity: holder, Remaining: time.Duration(remaining) * time.Microsecond}
	}
	return &lease.Grant{Name: name, Token: fence.Token(tok), TTL: ttl}, nil
}

// renewSQL extends every unexpired row of the batch that still holds its
// token, and reports for each item (by ordinality) whether it did, and the
// row's token and liveness as they were before.
const renewSQL = `
WITH req AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS r(name, token, ttl_us, i)
), renewed AS (
    UPDATE fencekit_leases l
    SET expires_at = statement_timestamp() + req.ttl_us * interval '1 microsecond'
    FROM req
    WHERE l.name = req.name AND l.token = req.token AND l.expires_at > statement_timestamp()
    RETURNING req.i
)
SELECT req.i, EXISTS (SELECT FROM renewed WHERE renewed.i = req.i),
       coalesce(l.token, 0), coalesce(l.expires_at > statement_timestamp(), false)
FROM req LEFT JOIN fencekit_leases l ON l.name = req.name`

// Renew extends the whole batch in one statement, one round trip. The
// statement ends at ctx's deadline but is not cancelled with ctx (see
// [detach]).
func (b *backend) Renew(ctx context.Context, batch []*lease.Grant) []error {
	errs := make([]error, len(batch))
	names := make([]string, len(batch))
	toks := make([]int64, len(batch))
	ttls := make([]int64, len(batch))
	for i, g := range batch {
		names[i], toks[i], ttls[i] = b.key(g.Name), int64(g.Token), g.TTL.Microseconds()
		errs[i] = errNoAnswer
	}
	ctx, cancel := detach(ctx)
	defer cancel()
	rows, err := b.pool.Query(ctx, renewSQL, names, toks, ttls)
	if err != nil {
		fill(errs, err)
		return errs
	}
	var (
		i           int64
		ok, live    bool
		current     int64
		errOrdinals = errors.New("pglease: renew: row number out of range")
	)
	_, err = pgx.ForEachRow(rows, []any{&i, &ok, &current, &live}, func() error {
		if i < 1 || int(i) > len(batch) {
			return errOrdinals
		}
		g := batch[i-1]
		switch {
		case ok:
			errs[i-1] = nil
		case current != int64(g.Token) && live:
			errs[i-1] = &lease.LostError{Cause: lease.CauseStolen}
		default: // expired, released, or the row is gone
			errs[i-1] = &lease.LostError{Cause: lease.CauseMissing}
		}
		return nil
	})
	if err != nil {
		fill(errs, err)
	}
	return errs
}

// detach returns a context with ctx's values and deadline but not its
// cancellation, for renewal statements. pgx closes a connection whose
// statement is cancelled (Client.Close cancels the renewals in flight): the
// pool keeps that connection's slot while pgx cleans up, up to 15 s, and in
// advisory mode the closed connection ends the session and the lock before
// Close releases it.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}

var errNoAnswer = errors.New("pglease: renew: no answer for this lease")

// fill sets every error of errs to err: the outcome of the whole batch is
// unknown.
func fill(errs []error, err error) {
	for i := range errs {
		errs[i] = err
	}
}

// releaseSQL ends the row if it still holds the grant (expiry -infinity,
// the token kept) and announces it on notifyChannel at commit, one statement.
const releaseSQL = `
WITH released AS (
    UPDATE fencekit_leases SET expires_at = '-infinity'
    WHERE name = $1 AND token = $2 AND expires_at > statement_timestamp()
    RETURNING name
), notified AS (
    SELECT pg_notify('` + notifyChannel + `', name) FROM released
)
SELECT (SELECT count(*) FROM notified) = 1,
       coalesce((SELECT token FROM fencekit_leases WHERE name = $1), 0),
       coalesce((SELECT expires_at > statement_timestamp() FROM fencekit_leases WHERE name = $1), false)`

// Release ends g's row and notifies the waiters, one round trip.
func (b *backend) Release(ctx context.Context, g *lease.Grant) error {
	var released, live bool
	var current int64
	if err := b.pool.QueryRow(ctx, releaseSQL, b.key(g.Name), int64(g.Token)).Scan(&released, &current, &live); err != nil {
		return err
	}
	switch {
	case released:
		return nil
	case current != int64(g.Token) && live:
		return &lease.LostError{Cause: lease.CauseStolen}
	default:
		return &lease.LostError{Cause: lease.CauseMissing}
	}
}

const inspectSQL = `SELECT token, expires_at > statement_timestamp(), ` + remainingUS + `, identity
FROM fencekit_leases WHERE name = $1`

// Inspect reads name's row, one round trip.
func (b *backend) Inspect(ctx context.Context, name string) (lease.Info, error) {
	var tok, remaining int64
	var held bool
	var identity string
	err := b.pool.QueryRow(ctx, inspectSQL, b.key(name)).Scan(&tok, &held, &remaining, &identity)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Info{}, nil
	}
	if err != nil {
		return lease.Info{}, err
	}
	info := lease.Info{Last: fence.Token(tok)}
	if held {
		info.Held, info.Holder, info.Identity = true, fence.Token(tok), identity
		info.Remaining = time.Duration(remaining) * time.Microsecond
	}
	return info, nil
}
