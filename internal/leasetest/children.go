package leasetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence"
)

// Variables the parent passes to the suite's children.
const (
	envIssuer  = "LEASETEST_ISSUER"
	envName    = "LEASETEST_NAME"
	envTTL     = "LEASETEST_TTL"
	envPG      = "LEASETEST_PG_URL"
	envS3      = "LEASETEST_S3" // endpoint,access,secret,bucket
	envTrigger = "LEASETEST_TRIGGER"
)

var (
	registerOnce sync.Once
	issuers      = map[string]Issuer{}
)

// Register makes the issuers' clients available to the suite's child
// processes. Call it from an init function or from TestMain before
// testenv.Main.
func Register(iss ...Issuer) {
	for _, is := range iss {
		issuers[is.Name] = is
	}
	registerOnce.Do(func() {
		testenv.RegisterChild("leasetest-hold", childHold)
		testenv.RegisterChild("leasetest-pause", childPause)
	})
}

// childAcquire makes the issuer's client and takes the lease named in the
// environment, waiting for it.
func childAcquire(ctx context.Context) (*lease.Lease, error) {
	iss, ok := issuers[os.Getenv(envIssuer)]
	if !ok {
		return nil, fmt.Errorf("no issuer %q registered", os.Getenv(envIssuer))
	}
	ttl, err := time.ParseDuration(os.Getenv(envTTL))
	if err != nil {
		return nil, err
	}
	c, err := iss.FromEnv(ctx)
	if err != nil {
		return nil, err
	}
	// Connect first: on a loaded machine a first request that also dials
	// can take longer than the TTL.
	if _, err := c.Inspect(ctx, os.Getenv(envName)); err != nil {
		return nil, err
	}
	return c.AcquireWait(ctx, os.Getenv(envName), ttl)
}

// childHold takes the lease, prints its token and keeps it (renewing)
// until it is killed.
func childHold() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := childAcquire(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("token", uint64(l.Token()))
	<-l.Done()
	fmt.Fprintln(os.Stderr, "lease ended:", l.Err())
	return 1
}

// sameReport is what every holder of the paused-holder test writes to S3.
const sameReport = "the daily report"

// childPause takes the lease, checks it is live and prints its token, as a
// worker does before a write; then (the parent pauses it meanwhile) it
// writes with that token to PostgreSQL through sqlfence and to S3 through
// blobfence once the trigger file exists, and prints each outcome.
func childPause() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := childAcquire(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if l.Err() != nil {
		fmt.Fprintln(os.Stderr, "lease ended at once:", l.Err())
		return 1
	}
	pool, err := pgxpool.New(ctx, os.Getenv(envPG))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	s3 := strings.Split(os.Getenv(envS3), ",")
	store, err := blobStore(blobfence.New(testenv.NewS3Client(s3[0], s3[1], s3[2]), s3[3], nil))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("token", uint64(l.Token()))
	for { // the parent stops the process here, past the TTL
		if _, err := os.Stat(os.Getenv(envTrigger)); err == nil {
			break
		}
		if ctx.Err() != nil {
			return 1
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("sql", outcome(sqlfence.Claim(ctx, pool, "paused", l.Token())))
	fmt.Println("blob", outcome(store.Put(ctx, "paused", []byte(sameReport), l.Token())))
	return 0
}

// blobStore takes blobfence.New's results whether it returns the store
// alone or with an error (its constructor is moving to (*Store, error)).
func blobStore(s *blobfence.Store, errs ...error) (*blobfence.Store, error) {
	return s, errors.Join(errs...)
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, fence.ErrStale):
		return "stale"
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// childEnv is what every child of ns needs to take name with ttl.
func childEnv(iss Issuer, ns Namespace, name string, ttl time.Duration) []string {
	return append(ns.Env(), envIssuer+"="+iss.Name, envName+"="+name, envTTL+"="+ttl.String())
}

// token parses a child's "token N" line.
func token(t *testing.T, line string) fence.Token {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimPrefix(line, "token "), 10, 64)
	if err != nil {
		t.Fatalf("child printed %q: %v", line, err)
	}
	return fence.Token(n)
}

// testKilledHolder kills (SIGKILL) a child holding the lease and checks
// that another client is granted it within the TTL plus one renew interval
// of the kill.
func testKilledHolder(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	child := testenv.StartChild(t, "leasetest-hold", childEnv(iss, ns, "killed", iss.TTL)...)
	line, err := child.Expect(ctx, "token ")
	if err != nil {
		t.Fatal(err)
	}
	held := token(t, line)
	// A standby already waits (refused) when the holder dies.
	got := make(chan *lease.Lease, 1)
	go func() {
		l, err := ns.Client(t, quiet).AcquireWait(ctx, "killed", iss.TTL)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(iss.TTL / 2) // the holder renews meanwhile
	killed := time.Now()
	if err := child.Kill(); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		return
	}
	took := time.Since(killed)
	bound := iss.TTL + iss.TTL/3 // TTL + the default renew interval
	t.Logf("taken over %v after the kill (TTL %v, bound %v)", took, iss.TTL, bound)
	if l.Token() <= held {
		t.Fatalf("token %v after the killed holder's %v", l.Token(), held)
	}
	if took > bound {
		t.Fatalf("taken over %v after the kill, more than TTL + renew interval = %v", took, bound)
	}
}

// testPausedHolder stops (SIGSTOP) a child that holds the lease and is
// about to write, past its TTL; another client takes the lease and writes
// with its newer token; the child, continued, writes with its old token:
// sqlfence and blobfence must refuse both writes as stale.
func testPausedHolder(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	pg, s3 := testenv.Postgres(t), testenv.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up, err := migrations.FS.ReadFile("000001_fencekit_tokens.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Pool.Exec(ctx, string(up)); err != nil {
		t.Fatal(err)
	}
	trigger := filepath.Join(t.TempDir(), "write")
	env := append(childEnv(iss, ns, "paused", iss.TTL), envPG+"="+pg.URL, envTrigger+"="+trigger,
		envS3+"="+strings.Join([]string{s3.Endpoint, s3.AccessKey, s3.SecretKey, s3.Bucket}, ","))
	child := testenv.StartChild(t, "leasetest-pause", env...)
	line, err := child.Expect(ctx, "token ")
	if err != nil {
		t.Fatal(err)
	}
	old := token(t, line)
	if err := child.Stop(); err != nil {
		t.Fatal(err)
	}
	other := ns.Client(t, quiet)
	if iss.SessionBound {
		// The server keeps the stopped holder's session, and the lease.
		time.Sleep(2 * iss.TTL)
		if _, err := other.Acquire(ctx, "paused", iss.TTL); !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatalf("Acquire while the holder is paused, 2 TTLs on: %v, want ErrNotAcquired", err)
		}
		ns.(SessionEnder).EndChildSessions(t)
	}
	l, err := other.AcquireWait(ctx, "paused", iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= old {
		t.Fatalf("token %v after the paused holder's %v", l.Token(), old)
	}
	if err := sqlfence.Claim(ctx, pg.Pool, "paused", l.Token()); err != nil {
		t.Fatal(err)
	}
	store, err := blobStore(blobfence.New(s3.Client, s3.Bucket, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes as the paused holder's (an idempotent job): accepted
	// from the new holder, refused from the old one by its token alone.
	if err := store.Put(ctx, "paused", []byte(sameReport), l.Token()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := child.Cont(); err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{"sql", "blob"} {
		line, err := child.Expect(ctx, store+" ")
		if err != nil {
			t.Fatal(err)
		}
		if line != store+" stale" {
			t.Errorf("paused holder's late write with token %v (new holder %v): %q, want %q", old, l.Token(), line, store+" stale")
		}
	}
	if body, tok, err := store.Get(ctx, "paused"); err != nil || tok != l.Token() || string(body) != sameReport {
		t.Errorf("after the paused holder's late write: %q, token %v, %v; want the new holder's %v", body, tok, err, l.Token())
	}
}
