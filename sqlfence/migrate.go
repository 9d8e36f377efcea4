package sqlfence

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers pgx5://
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/fencekit/fencekit/migrations"
)

// Migrate applies fencekit's embedded migrations (package migrations) to
// the database at databaseURL with golang-migrate, creating the
// fencekit_tokens guard table. Tables land in the first schema of the
// connection's search_path (add ?search_path=name to the URL to choose),
// next to golang-migrate's schema_migrations table.
//
// Re-running is a no-op (golang-migrate's ErrNoChange counts as success).
// Concurrent runs against one database and schema are safe: the driver
// serializes them with a PostgreSQL advisory lock, and the later run finds
// nothing to do. golang-migrate takes no context: Migrate checks ctx before
// connecting, bounds every statement (the wait for the advisory lock
// included) by ctx's deadline through PostgreSQL's statement_timeout unless
// the URL sets one, and asks golang-migrate to stop between migrations when
// ctx is done. Without a deadline, the wait for the lock is golang-migrate's
// default, 15 s, after which Migrate fails.
//
// databaseURL is a postgres:// or postgresql:// URL (pgx5:// is accepted
// too); golang-migrate's x- parameters pass through.
//
// Errors: an error for another URL form; ctx's error; golang-migrate's and
// PostgreSQL's errors (a dirty version after a failed migration needs
// manual repair, as with the migrate CLI).
func Migrate(ctx context.Context, databaseURL string) error {
	return run(ctx, "migrate up", databaseURL, (*migrate.Migrate).Up)
}

// MigrateDown reverts every embedded migration, dropping fencekit_tokens
// and its data. It is the inverse of [Migrate], for tests and uninstalls;
// nothing to revert is success. Errors are those of [Migrate].
func MigrateDown(ctx context.Context, databaseURL string) error {
	return run(ctx, "migrate down", databaseURL, (*migrate.Migrate).Down)
}

func run(ctx context.Context, op, databaseURL string, step func(*migrate.Migrate) error) (err error) {
	driverURL, err := pgx5URL(ctx, databaseURL)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlfence: %s: %w", op, err)
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("sqlfence: %s: reading embedded migrations: %w", op, err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, driverURL)
	if err != nil {
		return fmt.Errorf("sqlfence: %s: %w", op, err)
	}
	defer func() {
		srcErr, dbErr := m.Close()
		if cerr := errors.Join(srcErr, dbErr); cerr != nil && err == nil {
			err = fmt.Errorf("sqlfence: %s: close: %w", op, cerr)
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
		return fmt.Errorf("sqlfence: %s: %w", op, errors.Join(err, ctx.Err()))
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlfence: %s: stopped before finishing: %w", op, cerr)
	}
	return nil
}

// pgx5URL converts a postgres:// or postgresql:// URL to golang-migrate's
// pgx5:// scheme, which selects its pgx v5 driver. When ctx has a deadline
// and the URL sets no statement_timeout, it adds one that ends with ctx, so
// that waiting for golang-migrate's advisory lock (which it does without a
// context) is bounded too.
func pgx5URL(ctx context.Context, databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return "", fmt.Errorf("sqlfence: database URL does not parse: %w", err)
	}
	switch u.Scheme {
	case "postgres", "postgresql", "pgx5":
		u.Scheme = "pgx5"
		q := u.Query()
		if dl, ok := ctx.Deadline(); ok && q.Get("statement_timeout") == "" {
			q.Set("statement_timeout", strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
			u.RawQuery = q.Encode()
		}
		return u.String(), nil
	case "":
		return "", errors.New("sqlfence: database URL has no scheme; want postgres://user@host:port/db (key=value strings are not supported)")
	default:
		return "", fmt.Errorf("sqlfence: database URL scheme %q: want postgres:// or postgresql://", u.Scheme)
	}
}
