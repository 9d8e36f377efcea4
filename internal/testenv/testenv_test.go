package testenv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
)

func init() {
	testenv.RegisterChild("ticker", func() int {
		for i := 0; ; i++ {
			fmt.Println("tick", i)
			time.Sleep(5 * time.Millisecond)
		}
	})
	testenv.RegisterChild("echo-env", func() int {
		fmt.Println("value", os.Getenv("TESTENV_VALUE"))
		return 3
	})
}

func TestMain(m *testing.M) { testenv.Main(m) }

func TestRedis(t *testing.T) {
	ctx := context.Background()
	var prefixes []string
	var kept string
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			env := testenv.Redis(t)
			if strings.Trim(env.Prefix, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				t.Fatalf("prefix %q has characters outside [a-z0-9-]", env.Prefix)
			}
			prefixes = append(prefixes, env.Prefix)
			kept = env.Name("k")
			if err := env.Client.Set(ctx, kept, "v", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if got := env.Client.Get(ctx, kept).Val(); got != "v" {
				t.Fatalf("GET %s = %q", kept, got)
			}
		})
	}
	if len(prefixes) != 2 || prefixes[0] == prefixes[1] {
		t.Fatalf("prefixes not unique: %v", prefixes)
	}
	// The subtests' cleanup deleted their keys.
	c := testenv.Redis(t).Client
	if n := c.Exists(ctx, kept).Val(); n != 0 {
		t.Fatalf("key %s survived its test's cleanup", kept)
	}
}

func TestPostgres(t *testing.T) {
	ctx := context.Background()
	var schema string
	t.Run("schema", func(t *testing.T) {
		env := testenv.Postgres(t)
		schema = env.Schema
		var cur string
		if err := env.Pool.QueryRow(ctx, "SELECT current_schema()").Scan(&cur); err != nil {
			t.Fatal(err)
		}
		if cur != env.Schema {
			t.Fatalf("current_schema() = %q, want the test's schema %q", cur, env.Schema)
		}
		if _, err := env.Pool.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	env := testenv.Postgres(t)
	var n int
	if err := env.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("schema %s survived its test's cleanup", schema)
	}
}

func TestPostgresDatabase(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	var db string
	if err := env.Pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != env.Database || !strings.HasPrefix(db, "fk_") {
		t.Fatalf("current_database() = %q, env says %q", db, env.Database)
	}
}

func TestS3(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	put, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("k"),
		Body: strings.NewReader("hello"), Metadata: map[string]string{"fencekit-token": "34"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := env.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: &env.Bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "hello" || got.Metadata["fencekit-token"] != "34" || aws.ToString(got.ETag) != aws.ToString(put.ETag) {
		t.Fatalf("got %q meta %v etag %s; put etag %s", body, got.Metadata, aws.ToString(got.ETag), aws.ToString(put.ETag))
	}
	// The server honours conditional writes, which blobfence relies on.
	_, err = env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("k"),
		Body: strings.NewReader("again"), IfNoneMatch: aws.String("*")})
	if err == nil {
		t.Fatal("If-None-Match: * on an existing key succeeded")
	}
}

// TestUnreachableServers runs the test binary again with bogus addresses and
// checks that each server is reported by name with the variable to set:
// a failure under FENCEKIT_REQUIRE_SERVERS=1, a skip without it.
func TestUnreachableServers(t *testing.T) {
	for _, tc := range []struct{ server, env, value string }{
		{"Redis", testenv.EnvRedisAddr, "127.0.0.1:1"},
		{"PostgreSQL", testenv.EnvPostgresURL, "postgres://postgres@127.0.0.1:1/test"},
		{"S3 server", testenv.EnvS3Endpoint, "http://127.0.0.1:1"},
		{"etcd", testenv.EnvEtcdEndpoints, "http://127.0.0.1:1"},
	} {
		for _, require := range []string{"1", ""} {
			t.Run(tc.server+"/require="+require, func(t *testing.T) {
				cmd := exec.Command(os.Args[0], "-test.run=^TestBogusServerChild$", "-test.v")
				cmd.Env = append(os.Environ(), "TESTENV_BOGUS="+tc.server, tc.env+"="+tc.value,
					testenv.EnvRequireServers+"="+require)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				text := out.String()
				want := "testenv: " + tc.server + " unreachable at "
				if !strings.Contains(text, want) || !strings.Contains(text, tc.env) {
					t.Fatalf("output does not name %q and %s:\n%s", want, tc.env, text)
				}
				var exit *exec.ExitError
				if require == "1" {
					if !errors.As(err, &exit) || !strings.Contains(text, "--- FAIL: TestBogusServerChild") {
						t.Fatalf("with %s=1 the test did not fail (err %v):\n%s", testenv.EnvRequireServers, err, text)
					}
				} else if err != nil || !strings.Contains(text, "--- SKIP: TestBogusServerChild") {
					t.Fatalf("without %s the test did not skip (err %v):\n%s", testenv.EnvRequireServers, err, text)
				}
			})
		}
	}
}

// TestBogusServerChild is run by TestUnreachableServers only.
func TestBogusServerChild(t *testing.T) {
	switch os.Getenv("TESTENV_BOGUS") {
	case "Redis":
		testenv.Redis(t)
	case "PostgreSQL":
		testenv.Postgres(t)
	case "S3 server":
		testenv.S3(t)
	case "etcd":
		testenv.Etcd(t)
	default:
		t.Skip("run by TestUnreachableServers")
	}
	t.Error("the harness returned a server for a bogus address")
}

func TestRedisServerRestart(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedisServer(t)
	c := srv.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("after a restart without persistence GET = %v, want redis.Nil", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Stop")
	}
	// A replica of a private master follows it.
	master := testenv.StartRedisServer(t)
	replica := testenv.StartRedisServer(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.Port))
	master.Client(t).Set(ctx, "r", "1", 0)
	rc := replica.Client(t)
	deadline := time.Now().Add(10 * time.Second)
	for rc.Get(ctx, "r").Val() != "1" {
		if time.Now().After(deadline) {
			t.Fatal("replica did not receive the write within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChildSignals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := testenv.StartChild(t, "ticker")
	if _, err := c.Expect(ctx, "tick 3"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if st, err := c.State(); err != nil || st != 'T' {
		t.Fatalf("after Stop state = %c, %v; want T", st, err)
	}
	if err := c.Cont(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Expect(ctx, "tick"); err != nil {
		t.Fatalf("no output after Cont: %v", err)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Wait after Kill = %v, want signal: killed", err)
	}

	e := testenv.StartChild(t, "echo-env", "TESTENV_VALUE=42")
	if line, err := e.Expect(ctx, "value"); err != nil || line != "value 42" {
		t.Fatalf("Expect = %q, %v", line, err)
	}
	var exit *exec.ExitError
	if err := e.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exit = %v, want code 3", err)
	}
}

// TestS3ServerRestart starts a private server of each kind, checks that it
// is that kind (its Server header), and that a bucket survives a restart.
func TestS3ServerRestart(t *testing.T) {
	for kind, header := range map[string]string{testenv.ServerVersitygw: "VERSITYGW", testenv.ServerSeaweedFS: "SeaweedFS"} {
		t.Run(kind, func(t *testing.T) {
			t.Setenv(testenv.EnvS3Server, kind)
			ctx := context.Background()
			srv := testenv.StartS3Server(t)
			resp, err := http.Get(srv.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Server"); !strings.Contains(strings.ToUpper(got), strings.ToUpper(header)) {
				t.Fatalf("Server header %q; want the %s started for %s=%s", got, header, testenv.EnvS3Server, kind)
			}
			c := srv.Client()
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("restart-bucket")}); err != nil {
				t.Fatal(err)
			}
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("restart-bucket")}); err == nil {
				t.Fatal("HeadBucket succeeded with the server stopped")
			}
			if err := srv.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("restart-bucket")}); err != nil {
				t.Fatalf("bucket lost across a restart: %v", err)
			}
		})
	}
}

func TestPostgresServerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := testenv.StartPostgresServer(t)
	exec1 := func(sql string) error {
		conn, err := pgx.Connect(ctx, srv.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec1("CREATE TABLE t (v int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// A crash (SIGKILL) loses no committed row: the next start replays the WAL.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := exec1("SELECT 1"); err == nil {
		t.Fatal("query answered after Kill")
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := exec1("DO $$ BEGIN IF (SELECT count(*) FROM t) <> 1 THEN RAISE 'rows lost'; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
}
