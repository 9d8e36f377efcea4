package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
)

// The servers are named by the environment variables of fencekit's tests.
const (
	EnvRedisAddr   = testenv.EnvRedisAddr
	EnvPostgresURL = testenv.EnvPostgresURL
)

// Servers are the servers one benchmark binary uses, started through
// internal/testenv once for all its benchmarks. Their zero value finds or
// starts nothing; the methods start what is needed on first use and Close
// stops what they started.
type Servers struct {
	mu      sync.Mutex
	redis   *testenv.RedisServer
	s3      *testenv.S3Server
	tempDir string
}

// S3Endpoint is an S3-compatible server and its credentials.
type S3Endpoint struct {
	URL, AccessKey, SecretKey string
	// Pid is the process id of the versitygw the harness started, 0 for
	// FENCEKIT_S3_ENDPOINT.
	Pid int
}

// RedisAddr returns the Redis server's host:port: FENCEKIT_REDIS_ADDR if set,
// else a private redis-server it starts (once), else 127.0.0.1:6379.
func (s *Servers) RedisAddr(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := os.Getenv(EnvRedisAddr)
	switch _, noServer := exec.LookPath("redis-server"); {
	case s.redis != nil:
		return s.redis.Addr, nil
	case addr == "" && noServer != nil:
		addr = testenv.DefaultRedisAddr
	case addr == "":
		dir, err := s.dir("redis")
		if err != nil {
			return "", err
		}
		if s.redis, err = testenv.LaunchRedisServer(ctx, dir); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
		return s.redis.Addr, nil
	}
	if err := testenv.PingRedis(ctx, addr); err != nil {
		return "", fmt.Errorf("bench: Redis at %s: %w", addr, err)
	}
	return addr, nil
}

// PostgresURL returns FENCEKIT_POSTGRES_URL or the default URL.
func (s *Servers) PostgresURL() string {
	if u := os.Getenv(EnvPostgresURL); u != "" {
		return u
	}
	return testenv.DefaultPostgresURL
}

// S3 returns FENCEKIT_S3_ENDPOINT with its credentials if set, else a
// versitygw it starts (once) on a free loopback port.
func (s *Servers) S3(ctx context.Context) (*S3Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ep := os.Getenv(testenv.EnvS3Endpoint); ep != "" {
		e := &S3Endpoint{URL: ep, AccessKey: os.Getenv(testenv.EnvS3AccessKey), SecretKey: os.Getenv(testenv.EnvS3SecretKey)}
		if err := testenv.ProbeHTTP(ctx, ep); err != nil {
			return nil, fmt.Errorf("bench: S3 at %s: %w", ep, err)
		}
		return e, nil
	}
	if s.s3 == nil {
		dir, err := s.dir("s3")
		if err != nil {
			return nil, err
		}
		if s.s3, err = testenv.LaunchVersitygw(ctx, dir); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	return &S3Endpoint{URL: s.s3.Endpoint, AccessKey: s.s3.AccessKey, SecretKey: s.s3.SecretKey, Pid: s.s3.Pid()}, nil
}

// Close kills the servers it started and removes their data.
func (s *Servers) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redis != nil {
		s.redis.Kill()
	}
	if s.s3 != nil {
		s.s3.Kill()
	}
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir)
	}
	s.redis, s.s3, s.tempDir = nil, nil, ""
}

func (s *Servers) dir(name string) (string, error) {
	if s.tempDir == "" {
		d, err := os.MkdirTemp("", "fencekit-bench-")
		if err != nil {
			return "", fmt.Errorf("bench: temp dir: %w", err)
		}
		s.tempDir = d
	}
	d := filepath.Join(s.tempDir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return d, nil
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// ProcCPU returns the CPU time (user plus system) of process pid so far,
// from /proc/PID/stat, in steps of 10 ms.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("bench: CPU time of process %d: %w", pid, err)
	}
	return parseProcStat(string(b))
}

// parseProcStat returns utime+stime of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may hold spaces, so fields are
// counted from the last ')'.
func parseProcStat(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: malformed /proc stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// After ')': state is field 3, utime field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: malformed /proc stat %q", stat)
	}
	var total int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bench: malformed /proc stat CPU time %q", s)
		}
		total += n
	}
	return time.Duration(total) * clockTick, nil
}
