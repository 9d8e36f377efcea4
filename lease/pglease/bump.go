package pglease

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// bumpSQL raises the row's token to $2 unless the lease is held or $2 is
// more than $3 µs above the server's time (creating a released row when
// there is none), so that the next grant's token, greatest(token + 1, time
// in µs), is above $2. It returns the token before and after (0 after:
// nothing changed), the holder, whether the name is held, and the server's
// time in µs.
const bumpSQL = `
WITH old AS (
    SELECT token, identity, expires_at > statement_timestamp() AS held FROM fencekit_leases WHERE name = $1
), bumped AS (
    INSERT INTO fencekit_leases AS l (name, token, expires_at) SELECT $1, $2, '-infinity' WHERE $2 <= ` + nowUS + ` + $3
    ON CONFLICT (name) DO UPDATE SET token = greatest(l.token, $2)
        WHERE l.expires_at <= statement_timestamp()
    RETURNING token
)
SELECT coalesce((SELECT token FROM old), 0), coalesce((SELECT token FROM bumped), 0),
       coalesce((SELECT identity FROM old), ''), coalesce((SELECT held FROM old), false), ` + nowUS

// bumpAdvisorySQL is bumpSQL for fencekit_leases_advisory: held means a
// session holds the name's advisory lock.
const bumpAdvisorySQL = `
WITH holder AS (` + advisoryHolderSQL + `
), old AS (
    SELECT token, identity FROM fencekit_leases_advisory WHERE name = $1
), bumped AS (
    INSERT INTO fencekit_leases_advisory AS a (name, token)
        SELECT $1, $2 WHERE NOT EXISTS (SELECT FROM holder) AND $2 <= ` + nowUS + ` + $3
    ON CONFLICT (name) DO UPDATE SET token = greatest(a.token, $2)
    RETURNING token
)
SELECT coalesce((SELECT token FROM old), 0), coalesce((SELECT token FROM bumped), 0),
       coalesce((SELECT identity FROM old), ''), EXISTS (SELECT FROM holder), ` + nowUS

// Bump makes every later grant of the [New] lease name, under prefix,
// carry a token greater than to, and never lowers them: for switching to
// PostgreSQL from an issuer whose tokens are greater, or after the table
// was restored from an older dump (docs/leases.md, "Switching issuers").
// One statement. It returns the name's token before (0 for no row) and
// after; they are equal when the token was already at or above to.
//
// Errors: an error matching lease.ErrInvalid for a nil pool, a bad prefix
// (lease.KeyPrefix; "" is the default), name or to (1 to
// 2^63-2), and then nothing is sent; an error naming the holder
// when the name is held (bump it when free, so that the holder's token
// stays what Inspect shows); an error matching lease.ErrInvalid when to
// is more than [lease.MaxAhead] above the server's clock and above the
// name's token (lease.CheckAhead), and nothing changes: a token ahead of
// the clock would not be recovered if the row were lost; PostgreSQL's
// error otherwise.
func Bump(ctx context.Context, pool *pgxpool.Pool, prefix, name string, to fence.Token) (before, after fence.Token, err error) {
	return bump(ctx, "Bump", bumpSQL, pool, prefix, name, to)
}

// BumpAdvisory is [Bump] for the leases of [NewAdvisory]; held means a
// session holds the name's advisory lock.
func BumpAdvisory(ctx context.Context, pool *pgxpool.Pool, prefix, name string, to fence.Token) (before, after fence.Token, err error) {
	return bump(ctx, "BumpAdvisory", bumpAdvisorySQL, pool, prefix, name, to)
}

func bump(ctx context.Context, fn, sql string, pool *pgxpool.Pool, prefix, name string, to fence.Token) (before, after fence.Token, err error) {
	prefix, err = checkArgs(fn, pool, prefix, name)
	if err != nil {
		return 0, 0, err
	}
	if err := valid.Token(to); err != nil {
		return 0, 0, fmt.Errorf("pglease: %s %q: %w", fn, name, err)
	}
	if to == valid.MaxToken {
		return 0, 0, valid.Invalid("pglease: %s %q: token %v leaves no next token (the maximum is %v)", fn, name, to, valid.MaxToken-1)
	}
	var old, now, serverUS int64
	var identity string
	var held bool
	if err := pool.QueryRow(ctx, sql, prefix+":"+name, int64(to), lease.MaxAhead.Microseconds()).Scan(&old, &now, &identity, &held, &serverUS); err != nil {
		return 0, 0, fmt.Errorf("pglease: %s %q: %w", fn, name, err)
	}
	switch {
	case now != 0:
	case held:
		return 0, 0, fmt.Errorf("pglease: %s %q: held by token %v of %q; bump it when it is free", fn, name, old, identity)
	case fence.Token(old) >= to:
		now = old
	default:
		return 0, 0, fmt.Errorf("pglease: %s %q: %w", fn, name, lease.CheckAhead(to, time.UnixMicro(serverUS)))
	}
	return fence.Token(old), fence.Token(now), nil
}

// checkArgs checks the pool, prefix and names an operator function fn was
// passed, and returns the prefix to use.
func checkArgs(fn string, pool *pgxpool.Pool, prefix string, names ...string) (string, error) {
	if pool == nil {
		return "", valid.Invalid("pglease: %s: nil *pgxpool.Pool", fn)
	}
	prefix, err := lease.OperatorArgs(prefix, names...)
	if err != nil {
		return "", fmt.Errorf("pglease: %s: %w", fn, err)
	}
	return prefix, nil
}
