package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables naming the servers (the same as fencekit's tests).
const (
	EnvRedisAddr   = "FENCEKIT_REDIS_ADDR"
	EnvPostgresURL = "FENCEKIT_POSTGRES_URL"
	EnvS3Endpoint  = "FENCEKIT_S3_ENDPOINT"
	EnvS3Access    = "FENCEKIT_S3_ACCESS_KEY"
	EnvS3Secret    = "FENCEKIT_S3_SECRET_KEY"
	EnvVersitygw   = "FENCEKIT_VERSITYGW"

	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test"
)

// Credentials of the versitygw the harness starts.
const (
	s3Access = "fencekit-bench"
	s3Secret = "fencekit-bench-secret"
)

// Servers are the servers one benchmark binary uses. Their zero value finds
// or starts nothing; the methods start what is needed on first use and Close
// stops what they started.
type Servers struct {
	mu      sync.Mutex
	redis   string
	s3      *S3Endpoint
	procs   []*exec.Cmd
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
// The second result says where the address came from, for the report.
func (s *Servers) RedisAddr(ctx context.Context) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if addr := os.Getenv(EnvRedisAddr); addr != "" {
		return addr, EnvRedisAddr, pingRedis(ctx, addr)
	}
	if s.redis != "" {
		return s.redis, "private redis-server", nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return DefaultRedisAddr, "default", pingRedis(ctx, DefaultRedisAddr)
	}
	dir, err := s.dir("redis")
	if err != nil {
		return "", "", err
	}
	port, err := freePort()
	if err != nil {
		return "", "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	err = s.start(ctx, bin, dir, func(ctx context.Context) error { return pingRedis(ctx, addr) },
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no")
	if err != nil {
		return "", "", err
	}
	s.redis = addr
	return addr, "private redis-server", nil
}

// PostgresURL returns FENCEKIT_POSTGRES_URL or the default URL.
func (s *Servers) PostgresURL() string {
	if u := os.Getenv(EnvPostgresURL); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// S3 returns FENCEKIT_S3_ENDPOINT with its credentials if set, else a
// versitygw it starts (once) on a free loopback port.
func (s *Servers) S3(ctx context.Context) (*S3Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ep := os.Getenv(EnvS3Endpoint); ep != "" {
		return &S3Endpoint{URL: ep, AccessKey: os.Getenv(EnvS3Access), SecretKey: os.Getenv(EnvS3Secret)}, probeHTTP(ctx, ep)
	}
	if s.s3 != nil {
		return s.s3, nil
	}
	bin, err := versitygwPath()
	if err != nil {
		return nil, err
	}
	dir, err := s.dir("s3")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	url := "http://" + addr
	err = s.start(ctx, bin, dir, func(ctx context.Context) error { return probeHTTP(ctx, url) },
		"--port", addr, "--access", s3Access, "--secret", s3Secret, "posix", dir)
	if err != nil {
		return nil, err
	}
	s.s3 = &S3Endpoint{URL: url, AccessKey: s3Access, SecretKey: s3Secret, Pid: s.procs[len(s.procs)-1].Process.Pid}
	return s.s3, nil
}

// Close kills the servers it started and removes their data.
func (s *Servers) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cmd := range s.procs {
		cmd.Process.Kill()
		cmd.Wait()
	}
	s.procs = nil
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir)
		s.tempDir = ""
	}
	s.redis, s.s3 = "", nil
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

// start runs bin with args (log in dir) and waits, at most 30 s, for ready.
func (s *Servers) start(ctx context.Context, bin, dir string, ready func(context.Context) error, args ...string) error {
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: start %s: %w", bin, err)
	}
	s.procs = append(s.procs, cmd)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		err := ready(rctx)
		rcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("bench: %s not ready: %w\n%s", bin, errors.Join(err, ctx.Err()), log)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func versitygwPath() (string, error) {
	if p := os.Getenv(EnvVersitygw); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(filepath.SplitList(gopath)[0], "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("bench: versitygw is not installed (not in PATH nor %s); set %s or %s", p, EnvVersitygw, EnvS3Endpoint)
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func pingRedis(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("bench: Redis at %s: %w", addr, err)
	}
	return nil
}

// probeHTTP succeeds when any HTTP reply comes back from url.
func probeHTTP(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
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
