package main

import (
	"context"
	"flag"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
)

// guardRow is one line of pg-status: a row of fencekit_tokens.
type guardRow struct {
	Resource  string     `json:"resource"`
	Token     uint64     `json:"token"`      // 0: never claimed
	UpdatedAt *time.Time `json:"updated_at"` // null: never claimed
}

func setupPGStatus(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	url := fs.String("postgres", envOr(envPostgresURL, defPostgresURL),
		"PostgreSQL URL; its search_path must reach fencekit_tokens (env "+envPostgresURL+"; empty: libpq's PG* variables)")
	timeout := timeoutFlag(fs)
	return func(ctx context.Context, args []string) error {
		for _, r := range args {
			if r == "" {
				return usagef("empty RESOURCE")
			}
		}
		cfg, err := pgx.ParseConfig(*url)
		if err != nil {
			return usagef("-postgres: %v", err)
		}
		if *timeout <= 0 {
			return usagef("-timeout %v must be positive", *timeout)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		rows, err := guardRows(ctx, conn, args)
		if err != nil {
			return err
		}
		if o.json {
			return o.encode(rows)
		}
		text := make([][]string, len(rows))
		for i, r := range rows {
			at := "never claimed"
			if r.UpdatedAt != nil {
				at = r.UpdatedAt.UTC().Format(time.RFC3339Nano)
			}
			text[i] = []string{r.Resource, tokenText(fence.Token(r.Token)), at}
		}
		return o.table([]string{"RESOURCE", "TOKEN", "UPDATED_AT"}, text)
	}
}

// guardRows reads the guard rows of resources (every row when there are
// none), sorted by resource; a resource without a row comes back with
// token 0.
func guardRows(ctx context.Context, conn *pgx.Conn, resources []string) ([]guardRow, error) {
	sql, args := "SELECT resource, token, updated_at FROM fencekit_tokens ORDER BY resource", []any(nil)
	if len(resources) > 0 {
		sql = "SELECT r, t.token, t.updated_at FROM unnest($1::text[]) AS r LEFT JOIN fencekit_tokens t ON t.resource = r ORDER BY r"
		args = []any{resources}
	}
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (guardRow, error) {
		var (
			g   guardRow
			tok *int64
		)
		err := row.Scan(&g.Resource, &tok, &g.UpdatedAt)
		if tok != nil {
			g.Token = uint64(*tok)
		}
		return g, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
