package migrations

import (
	"context"
	"errors"
	"io"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/jackc/pgx/v5"
)

// txDriver is the golang-migrate database driver Up and Down use: every
// statement runs in one transaction, tx, which already holds the migration
// lock (see [run]). So a run commits all its migrations or none (a failed
// migration leaves no dirty version behind), and it works through a
// transaction-pooling PgBouncer, where golang-migrate's own driver would
// take its session advisory lock on one server connection and release it on
// another.
type txDriver struct {
	ctx context.Context
	tx  pgx.Tx
}

var _ database.Driver = txDriver{}

var errNotSupported = errors.New("not supported by fencekit's migration driver")

func (txDriver) Open(string) (database.Driver, error) { return nil, errNotSupported }
func (txDriver) Close() error                         { return nil }
func (txDriver) Lock() error                          { return nil } // held by tx
func (txDriver) Unlock() error                        { return nil }
func (txDriver) Drop() error                          { return errNotSupported }

// Run executes one migration file (several statements: simple protocol).
func (d txDriver) Run(migration io.Reader) error {
	sql, err := io.ReadAll(migration)
	if err != nil {
		return err
	}
	_, err = d.tx.Exec(d.ctx, string(sql))
	return err
}

// SetVersion records version (none for database.NilVersion) in versionTable.
func (d txDriver) SetVersion(version int, dirty bool) error {
	if _, err := d.tx.Exec(d.ctx, `DELETE FROM `+versionTable); err != nil {
		return err
	}
	if version == database.NilVersion {
		return nil
	}
	_, err := d.tx.Exec(d.ctx, `INSERT INTO `+versionTable+` (version, dirty) VALUES ($1, $2)`, int64(version), dirty)
	return err
}

// Version reads versionTable's row; no row is database.NilVersion.
func (d txDriver) Version() (int, bool, error) {
	var v int64
	var dirty bool
	err := d.tx.QueryRow(d.ctx, `SELECT version, dirty FROM `+versionTable+` LIMIT 1`).Scan(&v, &dirty)
	if errors.Is(err, pgx.ErrNoRows) {
		return database.NilVersion, false, nil
	}
	return int(v), dirty, err
}
