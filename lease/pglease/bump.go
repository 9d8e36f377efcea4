package pglease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
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
// session holds the name's advisory lock. The update looks for a holder
// again once it has the row (ON CONFLICT's WHERE): a first grant of the
// name may take the lock after the statement's first look and write the
// row first, and the row must keep that holder's token.
const bumpAdvisorySQL = `
WITH holder AS (` + advisoryHolderSQL + `
), old AS (
    SELECT token, identity FROM fencekit_leases_advisory WHERE name = $1
), bumped AS (
    INSERT INTO fencekit_leases_advisory AS a (name, token)
        SELECT $1, $2 WHERE NOT EXISTS (SELECT FROM holder) AND $2 <= ` + nowUS + ` + $3
    ON CONFLICT (name) DO UPDATE SET token = greatest(a.token, $2)
        WHERE NOT EXISTS (` + advisoryHolderSQL + `)
    RETURNING token
)
SELECT coalesce((SELECT token FROM old), 0), coalesce((SELECT token FROM bumped), 0),
       coalesce((SELECT identity FROM old), ''), EXISTS (SELECT FROM holder), ` + nowUS

// Bump raises the row's token to to, unless the lease is held or to is
// more than leasearg.MaxAhead above the server's clock, one statement: the
// next grant's token, greatest(token + 1, time in µs), is then above to.
// It bumps a name without a row too (a released row is created).
func (b *backend) Bump(ctx context.Context, name string, to fence.Token) (before, after fence.Token, err error) {
	return b.bump(ctx, bumpSQL, name, to)
}

// Bump is the advisory form of Bump: held means a session holds the
// name's advisory lock.
func (a *advisory) Bump(ctx context.Context, name string, to fence.Token) (before, after fence.Token, err error) {
	return a.bump(ctx, bumpAdvisorySQL, name, to)
}

func (b *backend) bump(ctx context.Context, sql, name string, to fence.Token) (before, after fence.Token, err error) {
	var old, now, serverUS int64
	var identity string
	var held bool
	if err := b.pool.QueryRow(ctx, sql, b.key(name), int64(to), leasearg.MaxAhead.Microseconds()).Scan(&old, &now, &identity, &held, &serverUS); err != nil {
		return 0, 0, err
	}
	switch {
	case now != 0:
	case held:
		return 0, 0, fmt.Errorf("held by token %v of %q; bump it when it is free", old, identity)
	case fence.Token(old) >= to:
		now = old
	default:
		if err := leasearg.CheckAhead(to, time.UnixMicro(serverUS)); err != nil {
			return 0, 0, err
		}
		// The update found a holder that took the name during the statement.
		return 0, 0, errors.New("granted while bumping; bump it when it is free")
	}
	return fence.Token(old), fence.Token(now), nil
}
