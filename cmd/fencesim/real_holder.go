package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/fencekit/fencekit/sqlfence"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// holderEnv carries the real mode's configuration, as JSON, to the holder
// child process; its presence makes the binary run holderMain.
const holderEnv = "FENCESIM_REAL_HOLDER"

// realConfig is what both the parent and the holder child need.
type realConfig struct {
	Redis      string        `json:"redis"`
	Postgres   string        `json:"postgres"`
	S3Endpoint string        `json:"s3_endpoint"`
	S3Access   string        `json:"s3_access"`
	S3Secret   string        `json:"s3_secret"`
	Bucket     string        `json:"bucket"`
	Name       string        `json:"name"` // lease name; also the guard resource, row key and object key
	TTL        time.Duration `json:"ttl"`
	Pause      time.Duration `json:"pause"`
}

// The three fenced stores a write goes to, in order.
var realStores = []string{"pg-guard", "pg-row", "s3"}

// stores holds the clients of the real servers.
type stores struct {
	rdb   *redis.Client
	pool  *pgxpool.Pool
	blobs *blobfence.Store
	table *sqlfence.Table
}

func (c *realConfig) connect(ctx context.Context) (*stores, error) {
	s := &stores{rdb: redis.NewClient(&redis.Options{Addr: c.Redis})}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.close()
		return nil, fmt.Errorf("real: redis at %s: %w (set -redis or FENCEKIT_REDIS_ADDR)", c.Redis, err)
	}
	pool, err := pgxpool.New(ctx, c.Postgres)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		s.close()
		return nil, fmt.Errorf("real: postgresql at %s: %w (set -postgres or FENCEKIT_POSTGRES_URL)", redactURL(c.Postgres), err)
	}
	s.pool = pool
	s.blobs, err = blobfence.New(newS3Client(c.S3Endpoint, c.S3Access, c.S3Secret), c.Bucket, nil)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("real: %w", err)
	}
	s.table, err = sqlfence.NewTable(demoRowTable, "key", "lock_version", "value")
	if err != nil {
		s.close()
		return nil, fmt.Errorf("real: %w", err)
	}
	return s, nil
}

func (s *stores) close() {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.rdb != nil {
		s.rdb.Close()
	}
}

// demoGuardTable holds the values written under the guard row; demoRowTable
// is fenced by its own lock_version column.
const (
	demoGuardTable = "fencesim_guarded"
	demoRowTable   = "fencesim_rows"
)

// write sends one fenced write of value with tok to store and returns
// "ok", "stale CURRENT" or "error MESSAGE".
func (s *stores) write(ctx context.Context, c *realConfig, store string, tok fence.Token, value string) string {
	var err error
	switch store {
	case "pg-guard":
		err = sqlfence.InTx(ctx, s.pool, c.Name, tok, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO `+demoGuardTable+` (key, value) VALUES ($1, $2)
				ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, c.Name, value)
			return err
		})
	case "pg-row":
		err = s.table.Update(ctx, s.pool, c.Name, tok, value)
	case "s3":
		err = s.blobs.Put(ctx, c.Name, []byte(value), tok)
	default:
		err = fmt.Errorf("unknown store %q", store)
	}
	var se *fence.StaleError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &se):
		return fmt.Sprintf("stale %d", se.Current)
	}
	return "error " + err.Error()
}

// holderMain is the child process: client A. It acquires the lease, says
// so, checks the lease, says "checked", and then waits for the parent's
// "write" line; the parent SIGSTOPs it before sending that line, so the
// whole process (heartbeat included) is frozen past the TTL. On resuming
// it writes to every store with its old token, as a paused process does.
func holderMain() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "fencesim holder: "+format+"\n", args...)
		return 1
	}
	var c realConfig
	if err := json.Unmarshal([]byte(os.Getenv(holderEnv)), &c); err != nil {
		return fail("bad %s: %v", holderEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+4*c.Pause)
	defer cancel()
	s, err := c.connect(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer s.close()
	lc, err := redislease.New(s.rdb, nil)
	if err != nil {
		return fail("lease client: %v", err)
	}
	l, err := lc.Acquire(ctx, c.Name, c.TTL)
	if err != nil {
		return fail("acquire: %v", err)
	}
	tok := l.Token()
	fmt.Printf("acquired %d\n", tok)
	if err := l.Err(); err != nil {
		return fail("lease lost at once: %v", err)
	}
	fmt.Println("checked") // the lease is valid: go ahead and write
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "write" {
		return fail("expected a write command on stdin")
	}
	for _, store := range realStores {
		fmt.Printf("write %s %s\n", store, s.write(ctx, &c, store, tok, "A's data"))
	}
	if err := l.Err(); err != nil {
		fmt.Printf("lease lost: %v\n", err)
	} else {
		fmt.Println("lease held")
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	_ = l.Release(rctx) // a lost lease has nothing to release
	return 0
}
