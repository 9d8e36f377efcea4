package migrations_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/migrations"
)

// Up creates fencekit_tokens and records fencekit's version in
// fencekit_schema_migrations; running it again changes nothing.
func ExampleUp() {
	ctx := context.Background()
	dbURL := os.Getenv("FENCEKIT_POSTGRES_URL")
	if dbURL == "" {
		dbURL = "postgres://postgres@127.0.0.1:5432/test"
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		panic(err)
	}
	defer conn.Close(ctx)
	// A schema of its own, so that the example leaves nothing behind.
	schema := fmt.Sprintf("fk_example_up_%d", rand.Uint64())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		panic(err)
	}
	defer conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	dbURL += sep + "search_path=" + schema

	fmt.Println("first run:", migrations.Up(ctx, dbURL))
	fmt.Println("second run:", migrations.Up(ctx, dbURL)) // no change: success
	var n int
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".fencekit_tokens").Scan(&n)
	fmt.Println("guard rows:", n)
	// Output:
	// first run: <nil>
	// second run: <nil>
	// guard rows: 0
}
