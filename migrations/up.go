package migrations

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers pgx5://
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
)

// Table is where Up and Down record fencekit's schema version (golang-migrate's
// format: one row, version and dirty), in the same schema as the tables.
const Table = "fencekit_schema_migrations"

// Up applies the embedded migrations to the database at databaseURL with
// golang-migrate, recording them in [Table] (never in golang-migrate's
// default schema_migrations, which belongs to the program's own
// migrations). Tables land in the first schema of the connection's
// search_path (add ?search_path=name to the URL to choose).
//
// A database migrated by fencekit before it had its own table (version 1
// recorded in schema_migrations, fencekit_tokens present) is taken over
// first, in one transaction: version 1 is recorded in [Table], and
// schema_migrations is emptied when it holds exactly fencekit's clean
// version 1, so that the program's own first migration still runs. Any other
// content of schema_migrations is the program's and is left alone.
//
// Re-running is a no-op (golang-migrate's ErrNoChange counts as success).
// Concurrent runs against one database and schema are safe: they are
// serialized by golang-migrate's PostgreSQL advisory lock, which the
// take-over takes too, and the later run finds nothing to do.
// golang-migrate takes no context: Up checks ctx before connecting, bounds
// every statement (the wait for the advisory lock included) by ctx's
// deadline through PostgreSQL's statement_timeout unless the URL sets one,
// and asks golang-migrate to stop between migrations when ctx is done.
// Without a deadline, the wait for the lock is golang-migrate's default,
// 15 s, after which Up fails.
//
// databaseURL is a postgres:// or postgresql:// URL (pgx5:// is accepted
// too); golang-migrate's x- parameters pass through, except
// x-migrations-table, which is always [Table].
//
// Errors: an error for another URL form; ctx's error; golang-migrate's and
// PostgreSQL's errors (a dirty version after a failed migration needs
// manual repair, as with the migrate CLI; docs/postgres.md says how).
// Error messages never contain the URL's password.
func Up(ctx context.Context, databaseURL string) error {
	return run(ctx, "up", databaseURL, (*migrate.Migrate).Up)
}

// Down reverts every embedded migration, dropping fencekit's tables and
// their data. It is the inverse of [Up], for tests and uninstalls; nothing
// to revert is success. Errors are those of [Up].
func Down(ctx context.Context, databaseURL string) error {
	return run(ctx, "down", databaseURL, (*migrate.Migrate).Down)
}

func run(ctx context.Context, op, databaseURL string, step func(*migrate.Migrate) error) (err error) {
	u, err := parseURL(databaseURL)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("migrations: %s: %w", op, err)
	}
	if err := takeOver(ctx, u); err != nil {
		return fmt.Errorf("migrations: %s: %w", op, errors.Join(err, ctx.Err()))
	}
	src, err := iofs.New(FS, ".")
	if err != nil {
		return fmt.Errorf("migrations: %s: reading embedded migrations: %w", op, err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, driverURL(ctx, u))
	if err != nil {
		return fmt.Errorf("migrations: %s: %w", op, err)
	}
	defer func() {
		srcErr, dbErr := m.Close()
		if cerr := errors.Join(srcErr, dbErr); cerr != nil && err == nil {
			err = fmt.Errorf("migrations: %s: close: %w", op, cerr)
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		m.LockTimeout = max(time.Until(dl), time.Millisecond)
	}
	stop := context.AfterFunc(ctx, func() {
		select {
		case m.GracefulStop <- true:
		default:
		}
	})
	defer stop()
	err = step(m)
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("migrations: %s: %w", op, errors.Join(err, ctx.Err()))
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("migrations: %s: stopped before finishing: %w", op, cerr)
	}
	return nil
}

// parseURL checks databaseURL's scheme. Its errors never repeat the URL,
// which may hold a password.
func parseURL(databaseURL string) (*url.URL, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("migrations: database URL does not parse: %w", err)
	}
	switch u.Scheme {
	case "postgres", "postgresql", "pgx5":
		return u, nil
	case "":
		return nil, errors.New("migrations: database URL has no scheme; want postgres://user@host:port/db (key=value strings are not supported)")
	default:
		return nil, fmt.Errorf("migrations: database URL scheme %q: want postgres:// or postgresql://", u.Scheme)
	}
}

// driverURL is u for golang-migrate's pgx v5 driver (scheme pgx5), recording
// in Table. When ctx has a deadline and the URL sets no statement_timeout, it
// adds one that ends with ctx, so that waiting for golang-migrate's advisory
// lock (which it does without a context) is bounded too.
func driverURL(ctx context.Context, u *url.URL) string {
	d := *u
	d.Scheme = "pgx5"
	q := d.Query()
	q.Set("x-migrations-table", Table)
	q.Del("x-migrations-table-quoted")
	if dl, ok := ctx.Deadline(); ok && q.Get("statement_timeout") == "" {
		q.Set("statement_timeout", strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
	d.RawQuery = q.Encode()
	return d.String()
}

// pgxURL is u for pgx: scheme postgres, without golang-migrate's x-
// parameters (pgx would send them to the server as settings).
func pgxURL(u *url.URL) string {
	p := *u
	p.Scheme = "postgres"
	q := p.Query()
	for k := range q {
		if strings.HasPrefix(k, "x-") {
			q.Del(k)
		}
	}
	p.RawQuery = q.Encode()
	return p.String()
}

// takeOver records version 1 in Table for a database that fencekit
// migrated before it had Table: fencekit_tokens exists in the current
// schema but Table holds no version. When schema_migrations there holds
// exactly fencekit's clean version 1, it is emptied, so that the program's
// own migrations start from their first. One transaction, under
// golang-migrate's advisory lock for Table, so that it never interleaves
// with a concurrent Up or Down. Costs one connection and five statements;
// nothing is changed on a database that needs no take-over.
func takeOver(ctx context.Context, u *url.URL) (err error) {
	conn, err := pgx.Connect(ctx, pgxURL(u))
	if err != nil {
		return hidePassword(err, u)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var schema string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	// golang-migrate's driver names the database by the URL's path.
	id, err := database.GenerateAdvisoryLockId(u.Path, schema, Table)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::bigint)`, id); err != nil {
		return err
	}
	var tokens, recorded, theirs bool
	err = tx.QueryRow(ctx, `SELECT
		to_regclass(quote_ident(current_schema()) || '.fencekit_tokens') IS NOT NULL,
		to_regclass(quote_ident(current_schema()) || '.`+Table+`') IS NOT NULL,
		to_regclass(quote_ident(current_schema()) || '.schema_migrations') IS NOT NULL`).Scan(&tokens, &recorded, &theirs)
	if err != nil {
		return err
	}
	if recorded {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+Table).Scan(&n); err != nil {
			return err
		}
		recorded = n > 0
	}
	if !tokens || recorded {
		return tx.Rollback(ctx)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+Table+` (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL);
		INSERT INTO `+Table+` (version, dirty) VALUES (1, false)`); err != nil {
		return err
	}
	if theirs {
		// fencekit's record is exactly one clean row with version 1; a
		// row the program's own migrations wrote is left alone.
		_, err := tx.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 1 AND NOT dirty AND (SELECT count(*) FROM schema_migrations) = 1`)
		if err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// hidePassword returns err without u's password in its text.
func hidePassword(err error, u *url.URL) error {
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}
