package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/migrations"
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newS3Client(endpoint, access, secret string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		UsePathStyle: true,
	})
}

// redactURL hides a password in a database URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// noS3 is what fencereal says when no S3 server is set: how to start a
// local one (versitygw, at the Makefile's VERSITYGW_VERSION, as
// docs/s3.md does) and run fencereal against it.
const noS3 = `real needs an S3 server: set -s3-endpoint (or FENCEKIT_S3_ENDPOINT) and its keys.
To start a local one (versitygw; see docs/s3.md) and run against it:
  go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
  mkdir -p /tmp/fencereal-s3
  ROOT_ACCESS_KEY=local ROOT_SECRET_KEY=localsecret versitygw --port 127.0.0.1:7070 posix /tmp/fencereal-s3 &
  FENCEKIT_S3_ENDPOINT=http://127.0.0.1:7070 FENCEKIT_S3_ACCESS_KEY=local FENCEKIT_S3_SECRET_KEY=localsecret go run ./cmd/fencereal`

func runReal(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencereal", flag.ContinueOnError)
	c := realConfig{TTL: 2 * time.Second, Pause: 5 * time.Second}
	fs.StringVar(&c.Redis, "redis", envOr("FENCEKIT_REDIS_ADDR", "127.0.0.1:6379"), "Redis host:port for the lease")
	fs.StringVar(&c.Postgres, "postgres", envOr("FENCEKIT_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"), "PostgreSQL URL")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", os.Getenv("FENCEKIT_S3_ENDPOINT"), "S3 endpoint URL (required; or FENCEKIT_S3_ENDPOINT)")
	fs.StringVar(&c.S3Access, "s3-access", os.Getenv("FENCEKIT_S3_ACCESS_KEY"), "S3 access key (or FENCEKIT_S3_ACCESS_KEY)")
	fs.StringVar(&c.S3Secret, "s3-secret", os.Getenv("FENCEKIT_S3_SECRET_KEY"), "S3 secret key (or FENCEKIT_S3_SECRET_KEY)")
	fs.StringVar(&c.Bucket, "s3-bucket", "fencesim", "S3 bucket, created if missing")
	fs.StringVar(&c.Name, "name", "fencesim-demo", "lease name; also the guard resource, the row key and the object key")
	fs.Func("ttl", "lease TTL, with a unit (default 2s)", durationFlag(&c.TTL))
	fs.Func("pause", "how long A stays stopped by SIGSTOP, with a unit; must exceed the TTL (default 5s)", durationFlag(&c.Pause))
	var out output
	out.register(fs)
	if status := parseFlags(fs, args, stderr); status >= 0 {
		return status
	}
	switch {
	case c.TTL < lease.MinTTL:
		return usageErr(stderr, "-ttl %v is below the lease minimum %v", c.TTL, lease.MinTTL)
	case c.Pause <= c.TTL:
		return usageErr(stderr, "-pause %v must exceed -ttl %v, or nothing goes wrong", c.Pause, c.TTL)
	case c.S3Endpoint == "":
		return usageErr(stderr, "%s", noS3)
	}
	if err := leasearg.Name(c.Name); err != nil {
		return usageErr(stderr, "-name: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+4*c.Pause)
	defer cancel()
	res, failures, err := realScenario(ctx, &c, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "fencereal: %v\n", err)
		return exitFailed
	}
	title := fmt.Sprintf("fencereal: Kleppmann's scenario on Redis %s, PostgreSQL and S3 %s (A is a child process stopped with SIGSTOP)",
		c.Redis, c.S3Endpoint)
	if code := out.emit(title, res, stdout, stderr); code != exitOK {
		return code
	}
	if !out.json {
		fmt.Fprintln(stdout, "\nWrites: 1 = PostgreSQL guard row (sqlfence.InTx), 2 = PostgreSQL lock_version row (sqlfence.Table), 3 = S3 object (blobfence).")
	}
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Fprintf(stderr, "fencereal: %s\n", f)
		}
		return exitFailed
	}
	return exitOK
}

// setup creates what the scenario writes to: the migrations, the two demo
// tables, the fenced row and the bucket.
func setup(ctx context.Context, c *realConfig, s *stores) error {
	if err := migrations.Up(ctx, c.Postgres); err != nil {
		return fmt.Errorf("real: migrate: %w", err)
	}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS ` + demoGuardTable + ` (key text PRIMARY KEY, value text NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + demoRowTable + ` (key text PRIMARY KEY, value text NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("real: create demo table: %w", err)
		}
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+demoRowTable+` (key, value) VALUES ($1, '') ON CONFLICT (key) DO NOTHING`, c.Name); err != nil {
		return fmt.Errorf("real: create demo row: %w", err)
	}
	cl := newS3Client(c.S3Endpoint, c.S3Access, c.S3Secret)
	if _, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(c.Bucket)}); err != nil {
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.Bucket)}); err != nil {
			return fmt.Errorf("real: s3 at %s: create bucket %s: %w", c.S3Endpoint, c.Bucket, err)
		}
	}
	return nil
}

// holder is the running child process and its output lines.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startHolder(c *realConfig) (*holder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("real: find own executable: %w", err)
	}
	conf, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), holderEnv+"="+string(conf))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("real: start holder: %w", err)
	}
	h := &holder{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	return h, nil
}

// expect returns the holder's next output line, which must start with prefix.
func (h *holder) expect(ctx context.Context, prefix string) (string, error) {
	select {
	case line, ok := <-h.lines:
		if !ok {
			return "", fmt.Errorf("real: holder exited before saying %q", prefix)
		}
		if !strings.HasPrefix(line, prefix) {
			return "", fmt.Errorf("real: holder said %q, want %q", line, prefix)
		}
		return strings.TrimSpace(strings.TrimPrefix(line, prefix)), nil
	case <-ctx.Done():
		return "", fmt.Errorf("real: waiting for the holder to say %q: %w", prefix, ctx.Err())
	}
}

func (h *holder) kill() {
	_ = h.cmd.Process.Signal(syscall.SIGCONT)
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// stopped reports whether the process is in the stopped state (Linux).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust the signal
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't')
}
