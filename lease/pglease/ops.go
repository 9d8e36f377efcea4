package pglease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// What operators' tools (cmd/fencectl) need beyond a *lease.Client: a
// listing, a forced release and Bump (bump.go). prefix is lease.Options.KeyPrefix.

// Names returns, sorted, the names of the leases under prefix (rows, held
// or not) that match the glob pattern: '*' any run of characters, '?' one,
// everything else literal. A nil pool, a bad prefix (lease.KeyPrefix;
// "" is the default) or a pattern that can match no name
// (lease.CheckPattern) is an error matching lease.ErrInvalid, and nothing
// is sent.
func Names(ctx context.Context, pool *pgxpool.Pool, prefix, pattern string) ([]string, error) {
	return names(ctx, "Names", pool, "fencekit_leases", prefix, pattern)
}

// AdvisoryNames is [Names] for the leases of [NewAdvisory] (rows of
// fencekit_leases_advisory, held or not).
func AdvisoryNames(ctx context.Context, pool *pgxpool.Pool, prefix, pattern string) ([]string, error) {
	return names(ctx, "AdvisoryNames", pool, "fencekit_leases_advisory", prefix, pattern)
}

func names(ctx context.Context, fn string, pool *pgxpool.Pool, table, prefix, pattern string) ([]string, error) {
	prefix, err := checkArgs(fn, pool, prefix)
	if err != nil {
		return nil, err
	}
	if err := lease.CheckPattern(pattern); err != nil {
		return nil, fmt.Errorf("pglease: %s: %w", fn, err)
	}
	rows, err := pool.Query(ctx, `SELECT substr(name, $2) FROM `+table+` WHERE name LIKE $1 ESCAPE '\' ORDER BY name`,
		likeEscape(prefix+":")+globToLike(pattern), len(prefix)+2)
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

// ForceReleased is what [ForceRelease] found and did.
type ForceReleased struct {
	Released  bool          // the grant was ended
	Held      bool          // the lease was held
	Holder    fence.Token   // the holder's token
	Identity  string        // the holder's lease.Options.Identity
	Remaining time.Duration // its remaining TTL before the release
}

// forceReleaseSQL ends the row's grant (as Release does) whoever holds it,
// or only if its token is $2 (when not 0), and notifies the waiters.
const forceReleaseSQL = `
WITH old AS (
    SELECT token, identity, expires_at > statement_timestamp() AS held, ` + remainingUS + ` AS remaining_us
    FROM fencekit_leases WHERE name = $1
), released AS (
    UPDATE fencekit_leases SET expires_at = '-infinity'
    WHERE name = $1 AND expires_at > statement_timestamp() AND ($2 = 0 OR token = $2)
    RETURNING name
), notified AS (
    SELECT pg_notify('` + Channel + `', name) FROM released
)
SELECT (SELECT count(*) FROM notified) = 1, token, identity, held, remaining_us FROM old`

// ForceRelease ends the lease name whoever holds it, or only if its holder
// has token only (when not 0), and wakes its waiters, one statement. The
// holder sees the lease gone at its next renewal. A nil pool, a bad prefix
// (lease.KeyPrefix; "" is the default) or name is an error matching
// lease.ErrInvalid, and nothing is sent.
func ForceRelease(ctx context.Context, pool *pgxpool.Pool, prefix, name string, only fence.Token) (ForceReleased, error) {
	prefix, err := checkArgs("ForceRelease", pool, prefix, name)
	if err != nil {
		return ForceReleased{}, err
	}
	var r ForceReleased
	var tok, remaining int64
	err = pool.QueryRow(ctx, forceReleaseSQL, prefix+":"+name, int64(only)).Scan(&r.Released, &tok, &r.Identity, &r.Held, &remaining)
	if err == pgx.ErrNoRows {
		return ForceReleased{}, nil
	}
	if err != nil {
		return ForceReleased{}, fmt.Errorf("force release: %w", err)
	}
	if r.Held {
		r.Holder, r.Remaining = fence.Token(tok), time.Duration(remaining)*time.Microsecond
	} else {
		r.Identity = ""
	}
	return r, nil
}

// forceReleaseAdvisorySQL finds the session holding name's advisory lock
// and, when its token is $2 (or $2 is 0), terminates that session: the
// server frees the lock at once, and the holder's next renewal fails.
const forceReleaseAdvisorySQL = `
WITH holder AS (` + advisoryHolderSQL + `
), row AS (
    SELECT token, identity FROM fencekit_leases_advisory WHERE name = $1
), ended AS (
    SELECT pg_terminate_backend(pid) AS ok FROM holder
    WHERE $2 = 0 OR (SELECT token FROM row) = $2
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

// ForceReleaseAdvisory ends the [NewAdvisory] lease name whoever holds it,
// or only if its holder has token only (when not 0), by terminating the
// holder's server session (pg_terminate_backend: it needs the
// pg_signal_backend role or a superuser), one statement. The holder's
// Context ends at its next renewal. Remaining is -1 while held. Bad input
// is refused as by [ForceRelease].
func ForceReleaseAdvisory(ctx context.Context, pool *pgxpool.Pool, prefix, name string, only fence.Token) (ForceReleased, error) {
	prefix, err := checkArgs("ForceReleaseAdvisory", pool, prefix, name)
	if err != nil {
		return ForceReleased{}, err
	}
	var r ForceReleased
	var tok int64
	key := prefix + ":" + name
	if err := pool.QueryRow(ctx, forceReleaseAdvisorySQL, key, int64(only)).Scan(&r.Released, &r.Held, &tok, &r.Identity); err != nil {
		return ForceReleased{}, fmt.Errorf("force release: %w", err)
	}
	if !r.Held {
		return ForceReleased{}, nil
	}
	r.Holder, r.Remaining = fence.Token(tok), -1
	return r, nil
}
