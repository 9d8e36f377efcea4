package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/redis/go-redis/v9"
)

// The fencectl binary the tests run, built on first use (fuzz targets
// need none) into a directory TestMain removes.
var (
	binDir   string
	buildBin sync.Once
	bin      string
	binErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary returns the built fencectl.
func binary(t *testing.T) string {
	t.Helper()
	buildBin.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "fencectl-test-"); binErr != nil {
			return
		}
		bin = filepath.Join(binDir, "fencectl")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build fencectl: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return bin
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// fencectl runs the binary with args and the extra environment ("K=V").
func fencectl(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fencectl %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// want fails unless r exited with code; it returns r.
func (r result) want(t *testing.T, code int, args ...string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("fencectl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// run runs fencectl and checks its exit code.
func runWant(t *testing.T, env []string, code int, args ...string) result {
	t.Helper()
	return fencectl(t, env, args...).want(t, code, args...)
}

// decode parses r's stdout as JSON into v.
func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the JSON expected (%T): %v\n%s", v, err, r.stdout)
	}
	return v
}

// lines starts fencectl with args and returns a channel of its stdout
// lines; the process is killed at cleanup.
func lines(t *testing.T, env []string, args ...string) (<-chan string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch <- sc.Text()
		}
		io.Copy(io.Discard, out)
		close(ch)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("fencectl %s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	return ch, cmd
}

// newLeases returns a lease client on rdb with the default prefix.
func newLeases(t *testing.T, rdb redis.UniversalClient, opts *lease.Options) *lease.Client {
	t.Helper()
	c, err := redislease.New(rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// -h and a bad flag print the command's usage once, not once from the flag
// package and again from fencectl.
func TestUsagePrintedOnce(t *testing.T) {
	for _, c := range []struct {
		code int
		args []string
	}{{0, []string{"status", "-h"}}, {2, []string{"status", "-bogus", "x"}}, {0, []string{"watch", "-h"}}} {
		r := runWant(t, nil, c.code, c.args...)
		if n := strings.Count(r.stderr, "usage: fencectl"); n != 1 {
			t.Errorf("fencectl %s: usage printed %d times:\n%s", strings.Join(c.args, " "), n, r.stderr)
		}
	}
}

// Flags given before the command, as in "fencectl -backend postgres list",
// are a usage error that says where they go, with the line rewritten.
func TestFlagsBeforeCommandSayWhereTheyGo(t *testing.T) {
	r := runWant(t, nil, 2, "-backend", "postgres", "list", "orders*")
	if want := "flags go after the command: fencectl list -backend postgres orders*"; !strings.Contains(r.stderr, want) {
		t.Errorf("fencectl -backend postgres list:\n%s\nwant %q", r.stderr, want)
	}
}

// bump -h lists the backends whose tokens it can raise, and says why not
// etcd, rather than every lease backend.
func TestBumpHelpNamesItsBackends(t *testing.T) {
	r := runWant(t, nil, 0, "bump", "-h")
	if !strings.Contains(r.stderr, "redis, postgres, postgres-advisory, zookeeper (etcd's tokens are revisions") {
		t.Errorf("bump -h:\n%s\nwant the backends bump supports", r.stderr)
	}
}

// A bad -prefix or PATTERN is a usage error (exit 2) that names the flag or
// argument once and connects to nothing: here a listener that counts the
// connections it is offered.
func TestBadPrefixOrPatternSendsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bump", "-redis", addr, "-prefix", "bad{p", "--to", "5", "ok"}, "-prefix: key prefix"},
		{[]string{"status", "-redis", addr, "-prefix", "a b", "ok"}, "-prefix: key prefix"},
		{[]string{"list", "-redis", addr, "a{"}, "PATTERN: pattern"},
		{[]string{"list", "-redis", addr, "a b"}, "PATTERN: pattern"},
		{[]string{"list", "-redis", addr, ""}, "PATTERN: pattern is empty"},
	} {
		r := runWant(t, nil, exitUsage, c.args...)
		msg, _, _ := strings.Cut(r.stderr, "\n") // then the usage
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "lease:") {
			t.Errorf("fencectl %q: %s\nwant %q and no package prefix", c.args, msg, c.want)
		}
		if n := strings.Count(r.stderr, "\n"); n != 2 {
			t.Errorf("fencectl %q printed %d lines:\n%s\nwant the cause and one line of usage", c.args, n, r.stderr)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections for bad input, want none", n)
	}
}
