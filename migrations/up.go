package migrations

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/internal/valid"
)

// versionTable is where Up and Down record fencekit's schema version (golang-migrate's
// format: one row, version and dirty), in the same schema as the tables.
const versionTable = "fencekit_schema_migrations"

// Up applies the embedded migrations to the database at databaseURL with
// golang-migrate, recording them in fencekit_schema_migrations (never in golang-migrate's
// default schema_migrations, which belongs to the program's own
// migrations). Tables land in the first schema of the connection's
// search_path (add ?search_path=name to the URL to choose).
//
// Up runs on one connection, in one transaction: it commits every pending
// migration or none, so a failed run leaves no dirty version behind. The
// transaction holds the advisory lock golang-migrate's PostgreSQL driver
// uses for fencekit_schema_migrations, so concurrent runs against one database and schema
// (every replica at start-up) are serialized and the later finds nothing
// to do; waiting for the lock, like every statement, ends with ctx. Its
// statements use no named prepared statements and no startup parameters,
// so Up works through PgBouncer in transaction pooling mode. Re-running is
// a no-op.
//
// A database migrated by fencekit before it had its own table (fencekit_tokens
// present, fencekit_schema_migrations absent or empty) is taken over: version 1 is recorded
// in fencekit_schema_migrations. schema_migrations is never changed: its rows may be the
// program's own (docs/postgres.md says what to do when it held fencekit's
// version 1).
//
// databaseURL is a postgres:// or postgresql:// URL (pgx5:// is accepted
// too); golang-migrate's x- parameters are ignored.
//
// Errors: an error matching [fence.ErrInvalid] for another URL form
// (nothing sent); ctx's error; golang-migrate's and
// PostgreSQL's errors. Error messages never contain the URL's password.
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
	defer func() {
		if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
			err = errors.Join(err, cerr)
		}
		if err != nil {
			err = fmt.Errorf("migrations: %s: %w", op, err)
		}
	}()
	conn, err := connect(ctx, u)
	if err != nil {
		return err
	}
	bg := context.WithoutCancel(ctx)
	defer conn.Close(bg)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(bg) // a no-op after Commit
	if err := lock(ctx, tx, u); err != nil {
		return err
	}
	if err := takeOver(ctx, tx); err != nil {
		return err
	}
	src, err := iofs.New(FS, ".")
	if err != nil {
		return fmt.Errorf("reading embedded migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", txDriver{ctx: ctx, tx: tx})
	if err != nil {
		return err
	}
	defer m.Close()
	stop := context.AfterFunc(ctx, func() {
		select {
		case m.GracefulStop <- true:
		default:
		}
	})
	defer stop()
	if err := step(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stopped before finishing, nothing changed: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// connect opens the one connection a run uses. Its statements run in pgx's
// exec mode (no named prepared statements), which works through PgBouncer.
func connect(ctx context.Context, u *url.URL) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(pgxURL(u))
	if err != nil {
		return nil, hidePassword(err, u)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, hidePassword(err, u)
	}
	return conn, nil
}

// lock takes, in tx, the advisory lock that golang-migrate's PostgreSQL
// drivers take for versionTable (same key: runs of older fencekit versions are
// serialized with this one too), as a transaction-level lock: it is held
// until tx ends, and waiting for it ends with ctx.
func lock(ctx context.Context, tx pgx.Tx, u *url.URL) error {
	var schema string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	// golang-migrate's driver names the database by the URL's path.
	id, err := database.GenerateAdvisoryLockId(u.Path, schema, versionTable)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::bigint)`, id); err != nil {
		return fmt.Errorf("waiting for the migration lock: %w", err)
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
		return nil, valid.Invalid("migrations: database URL does not parse: %v", err)
	}
	switch u.Scheme {
	case "postgres", "postgresql", "pgx5":
		return u, nil
	case "":
		return nil, valid.Invalid("migrations: database URL has no scheme; want postgres://user@host:port/db (key=value strings are not supported)")
	default:
		return nil, valid.Invalid("migrations: database URL scheme %.20q: want postgres:// or postgresql://", u.Scheme)
	}
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

// takeOver creates versionTable and, for a database that fencekit migrated before
// it had versionTable (fencekit_tokens exists in the current schema but versionTable
// holds no version), records version 1 there. It never changes
// schema_migrations: a row there may be the program's own (docs/postgres.md
// says what to do when it was fencekit's). Two or three statements in tx.
func takeOver(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+versionTable+` (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`); err != nil {
		return err
	}
	var preMove bool
	err := tx.QueryRow(ctx, `SELECT to_regclass(quote_ident(current_schema()) || '.fencekit_tokens') IS NOT NULL
		AND NOT EXISTS (SELECT FROM `+versionTable+`)`).Scan(&preMove)
	if err != nil || !preMove {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+versionTable+` (version, dirty) VALUES (1, false)`)
	return err
}

// hidePassword returns err without u's password in its text; errors.Is
// and errors.As still reach the driver's errors in err's chain.
func hidePassword(err error, u *url.URL) error {
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &passwordHidden{err: err, password: pw}
}

// passwordHidden is an error whose text has a password masked.
type passwordHidden struct {
	err      error
	password string
}

func (e *passwordHidden) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.password, "xxxxx")
}
func (e *passwordHidden) Unwrap() error { return e.err }
