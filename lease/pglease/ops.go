package pglease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// The operator calls of lease.Client (lease.Operator): a listing, a
// forced release and Bump (bump.go), for New's leases (backend) and
// NewAdvisory's (advisory).

var (
	_ lease.Operator = (*backend)(nil)
	_ lease.Operator = (*advisory)(nil)
)

// Names lists the rows of fencekit_leases, held or not, one statement.
func (b *backend) Names(ctx context.Context, pattern string) ([]string, error) {
	return b.names(ctx, "fencekit_leases", pattern)
}

// Names lists the rows of fencekit_leases_advisory, held or not.
func (a *advisory) Names(ctx context.Context, pattern string) ([]string, error) {
	return a.names(ctx, "fencekit_leases_advisory", pattern)
}

func (b *backend) names(ctx context.Context, table, pattern string) ([]string, error) {
	rows, err := b.pool.Query(ctx, `SELECT substr(name, $2) FROM `+table+` WHERE name LIKE $1 ESCAPE '\' ORDER BY name`,
		likeEscape(b.prefix+":")+globToLike(pattern), len(b.prefix)+2)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// likeEscape quotes LIKE's special characters.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// globToLike turns a glob ('*', '?') into a LIKE pattern.
func globToLike(glob string) string {
	var b strings.Builder
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteByte('%')
		case '?':
			b.WriteByte('_')
		default:
			b.WriteString(likeEscape(string(r)))
		}
	}
	return b.String()
}

// forceReleaseSQL ends the row's grant (as Release does) whoever holds it,
// or only if its token is $2 (when not 0), and notifies the waiters.
const forceReleaseSQL = `
WITH old AS (
    SELECT token, identity, expires_at > statement_timestamp() AS held, ` + remainingUS + ` AS remaining_us
    FROM fencekit_leases WHERE name = $1
), released AS (
    UPDATE fencekit_leases SET expires_at = '-infinity'
    WHERE name = $1 AND expires_at > statement_timestamp() AND ($2::bigint = 0 OR token = $2)
    RETURNING name
), notified AS (
    SELECT pg_notify('` + notifyChannel + `', name) FROM released
)
SELECT (SELECT count(*) FROM notified) = 1, token, identity, held, remaining_us FROM old`

// ForceRelease ends the row's grant as Release does and wakes its
// waiters, one statement. The holder sees the lease gone at its next
// renewal.
func (b *backend) ForceRelease(ctx context.Context, name string, only fence.Token) (lease.Info, error) {
	var released, held bool
	var tok, remaining int64
	var identity string
	err := b.pool.QueryRow(ctx, forceReleaseSQL, b.key(name), int64(only)).Scan(&released, &tok, &identity, &held, &remaining)
	if err == pgx.ErrNoRows || err == nil && !held {
		return lease.Info{}, nil
	}
	if err != nil {
		return lease.Info{}, err
	}
	return lease.Info{Held: true, Holder: fence.Token(tok), Identity: identity, Remaining: time.Duration(remaining) * time.Microsecond}, nil
}

// forceReleaseAdvisorySQL finds the session holding name's advisory lock
// and, when its token is $2 (or $2 is 0), terminates that session and
// waits up to 5 s for it to end (PostgreSQL 14 and later), since the lock
// is freed only when the session's process exits; the holder's next
// renewal fails.
const forceReleaseAdvisorySQL = `
WITH holder AS (` + advisoryHolderSQL + `
), row AS (
    SELECT token, identity FROM fencekit_leases_advisory WHERE name = $1
), ended AS (
    SELECT pg_terminate_backend(pid, 5000) AS ok FROM holder
    WHERE $2::bigint = 0 OR (SELECT token FROM row) = $2
)
SELECT coalesce((SELECT bool_or(ok) FROM ended), false), EXISTS (SELECT FROM holder),
       coalesce((SELECT token FROM row), 0), coalesce((SELECT identity FROM row), '')`

// advisoryHolderSQL selects the pid of the session holding the advisory
// lock of the row key $1.
const advisoryHolderSQL = `
    SELECT l.pid FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND ((l.classid::bigint << 32) | l.objid::bigint) = ` + lockKey

// ForceRelease ends a NewAdvisory lease by terminating the holder's
// server session (pg_terminate_backend: it needs the pg_signal_backend
// role or a superuser): a transaction that locks the grant's row, then one
// statement, four round trips. The holder's Context ends at its next
// renewal. Remaining is -1: the lock has no expiry.
func (a *advisory) ForceRelease(ctx context.Context, name string, only fence.Token) (lease.Info, error) {
	var released, held bool
	var tok int64
	var identity string
	// The row lock first, in a statement of its own: an Acquire that holds
	// the advisory lock but has not written its token holds the row, and
	// this waits for it (see advisoryAcquireSQL).
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT FROM fencekit_leases_advisory WHERE name = $1 FOR SHARE`, a.key(name)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, forceReleaseAdvisorySQL, a.key(name), int64(only)).Scan(&released, &held, &tok, &identity)
	})
	if err != nil {
		return lease.Info{}, err
	}
	if !held {
		return lease.Info{}, nil
	}
	if !released && (only == 0 || only == fence.Token(tok)) {
		return lease.Info{}, fmt.Errorf("the session holding token %v did not end within 5 s of pg_terminate_backend "+
			"(its server process is stopped or stuck): it releases the lock when it next runs; check with Inspect (fencectl status)", tok)
	}
	return lease.Info{Held: true, Holder: fence.Token(tok), Identity: identity, Remaining: -1}, nil
}
