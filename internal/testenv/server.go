package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a server process the harness started on a loopback port. A test
// may stop, kill, pause and start it again: it comes back on the same port
// with the same data directory. It is killed at the test's cleanup and, as a
// last resort, when the test binary dies (Pdeathsig).
type Server struct {
	Name string // program name, for messages
	Addr string // 127.0.0.1:port
	Port int
	Dir  string // data directory, kept across restarts

	bin     string
	args    []string
	ready   func(context.Context) error
	timeout time.Duration       // how long a start may take (0: startTimeout)
	cred    *syscall.Credential // run as this user (nil: as the test)
	stopSig syscall.Signal      // graceful stop (0: SIGTERM)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 20 * time.Second

// Start starts the process and waits until it is ready. Starting a running
// server is an error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("testenv: %s on %s is already running", s.Name, s.Addr)
	}
	logf, err := os.OpenFile(filepath.Join(s.Dir, s.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: %s log: %w", s.Name, err)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("testenv: start %s: %w", s.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	timeout := s.timeout
	if timeout == 0 {
		timeout = startTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := s.ready(rctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("testenv: %s exited while starting on %s: %v\n%s", s.Name, s.Addr, err, s.logTail())
		case <-rctx.Done():
			s.killLocked()
			return fmt.Errorf("testenv: %s on %s not ready after %v: %v\n%s", s.Name, s.Addr, timeout, err, s.logTail())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Stop ends the process gracefully (SIGTERM; PostgreSQL: SIGINT, its fast
// shutdown), killing it after 10 s.
func (s *Server) Stop() error {
	if s.stopSig != 0 {
		return s.end(s.stopSig)
	}
	return s.end(syscall.SIGTERM)
}

// Kill ends the process and its children with SIGKILL and waits for them.
func (s *Server) Kill() error { return s.end(syscall.SIGKILL) }

// Restart stops the process and starts it again on the same port.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Pause stops the process with SIGSTOP: it keeps its sockets but answers
// nothing until [Server.Resume].
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

// Pid is the process id of the server, 0 when it is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the process is running (paused counts).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("testenv: %s on %s is not running", s.Name, s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}

func (s *Server) end(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot handle SIGTERM
	if sig == syscall.SIGKILL {
		s.killGroupLocked()
		return nil
	}
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.killLocked()
		return nil
	}
	s.cmd = nil
	return nil
}

func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	s.killGroupLocked()
}

// killGroupLocked kills the process and its children (PostgreSQL's
// backends, each in a session of its own: a crash of the whole server) and
// waits, up to 2 s, until none is left running, so that a restart finds
// the server's shared memory free.
func (s *Server) killGroupLocked() {
	pid := s.cmd.Process.Pid
	kids := childPIDs(pid)
	s.cmd.Process.Kill()
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
	<-s.exited
	s.cmd = nil
	for _, k := range kids {
		for range 200 {
			if st, err := procState(k); err != nil || st == 'Z' || st == 'X' {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// childPIDs lists the processes whose parent is pid, from /proc.
func childPIDs(pid int) []int {
	var kids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		k, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(pid) {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// procState is a process's state letter from /proc ('Z': zombie).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc stat %q", b)
	}
	return b[i+2], nil
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, s.Name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// newServer prepares (but does not start) a server on port with data in dir.
func newServer(name, bin string, port int, dir string, args []string) *Server {
	return &Server{Name: name, Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir, bin: bin, args: args}
}

// RedisServer is a private redis-server for fault tests.
type RedisServer struct{ *Server }

// startForTest starts s or fails tb, and kills s at tb's cleanup.
func (s *Server) startForTest(tb testing.TB) {
	tb.Helper()
	if err := s.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Kill() })
}

// StartRedisServer starts a private redis-server on a free loopback port with
// no persistence (so a restart loses every key, as the machine's own Redis
// does) and the given extra arguments, e.g. "--replicaof", "127.0.0.1",
// "6380" or "--cluster-enabled", "yes". It is killed at cleanup.
func StartRedisServer(tb testing.TB, extra ...string) *RedisServer {
	tb.Helper()
	s, err := newRedisServer(tb.TempDir(), extra...)
	if err != nil {
		tb.Fatal(err)
	}
	s.startForTest(tb)
	return s
}

// LaunchRedisServer starts a redis-server as [StartRedisServer] does, with
// its data in dir, for a caller that outlives a test (a benchmark binary
// keeps one for all its benchmarks): the caller kills it.
func LaunchRedisServer(ctx context.Context, dir string) (*RedisServer, error) {
	s, err := newRedisServer(dir)
	if err != nil {
		return nil, err
	}
	return s, s.Start(ctx)
}

func newRedisServer(dir string, extra ...string) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("testenv: redis-server is not installed (%w); install Debian's redis-server package", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := newServer("redis-server", bin, port, dir, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no"}, extra...))
	s.ready = func(ctx context.Context) error { return PingRedis(ctx, s.Addr) }
	return &RedisServer{s}, nil
}

// Client returns a client of the server, closed at cleanup. It does not retry
// failed commands, so a test sees each fault as it happens.
func (s *RedisServer) Client(tb testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

// PingRedis returns nil when the Redis server at addr answers PING.
func PingRedis(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer c.Close()
	err := c.Ping(ctx).Err()
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("PING timed out: %w", err)
	}
	return err
}
