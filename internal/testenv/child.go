package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envChild names the child function a re-executed test binary runs.
const envChild = "FENCEKIT_TESTENV_CHILD"

// IsChild reports whether this process is a child that [StartChild]
// started (a TestMain that sets process-wide state can leave it to the
// child's own function).
func IsChild() bool { return os.Getenv(envChild) != "" }

var children = map[string]func() int{}

// RegisterChild registers fn under name, to run instead of the tests when
// [StartChild] starts the test binary again as a child process. Call it from
// an init function or from TestMain before [Main]. fn's return value is the
// child's exit code; what it prints on stdout, line by line, is what
// [Child.Expect] reads.
func RegisterChild(name string, fn func() int) {
	if _, dup := children[name]; dup {
		panic("testenv: child " + name + " registered twice")
	}
	children[name] = fn
}

// Child is a helper process: the test binary run again as one registered
// child function. A test may pause, continue and kill it with real signals.
type Child struct {
	Name string
	Pid  int

	cmd    *exec.Cmd
	lines  chan string
	exited chan struct{}
	waitMu sync.Mutex
	err    error
	stderr bytes.Buffer
}

// StartChild starts the child registered as name, with env ("KEY=value")
// added to the test's environment. The child is killed at cleanup; its
// stderr is logged if the test fails. The package must call [Main] from its
// TestMain.
func StartChild(tb testing.TB, name string, env ...string) *Child {
	tb.Helper()
	if _, ok := children[name]; !ok {
		tb.Fatalf("testenv: no child registered as %q", name)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envChild+"="+name), env...)
	c := &Child{Name: name, cmd: cmd, lines: make(chan string, 1024), exited: make(chan struct{})}
	cmd.Stderr = &syncWriter{w: &c.stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("testenv: child %s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("testenv: start child %s: %v", name, err)
	}
	c.Pid = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.waitMu.Lock()
		c.err = cmd.Wait()
		c.waitMu.Unlock()
		close(c.exited)
	}()
	tb.Cleanup(func() {
		c.Kill()
		if tb.Failed() {
			tb.Logf("child %s stderr:\n%s", name, c.Stderr())
		}
	})
	return c
}

// Expect reads the child's stdout until a line starting with prefix and
// returns that line; it fails when the child exits first or ctx ends.
func (c *Child) Expect(ctx context.Context, prefix string) (string, error) {
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("testenv: child %s exited before printing %q: %v\nstderr:\n%s", c.Name, prefix, c.Wait(), c.Stderr())
			}
			if strings.HasPrefix(line, prefix) {
				return line, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("testenv: child %s did not print %q: %w", c.Name, prefix, ctx.Err())
		}
	}
}

// Stop pauses the child with SIGSTOP and waits until the kernel reports it
// stopped, so that it provably runs no more code until [Child.Cont].
func (c *Child) Stop() error {
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("testenv: SIGSTOP child %s: %w", c.Name, err)
	}
	for range 500 {
		if st, err := c.State(); err != nil || st == 'T' {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("testenv: child %s did not stop", c.Name)
}

// Cont continues a stopped child with SIGCONT.
func (c *Child) Cont() error { return c.cmd.Process.Signal(syscall.SIGCONT) }

// Kill ends the child with SIGKILL and waits for it to exit. Killing an
// exited child does nothing.
func (c *Child) Kill() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	c.Wait()
	return nil
}

// Wait waits for the child to exit and returns its exit error (nil for
// status 0). Draining stdout is part of waiting: lines not yet read by
// Expect stay buffered up to 1024, later ones are dropped.
func (c *Child) Wait() error {
	go func() {
		for range c.lines { //nolint: drain so the reader can finish
		}
	}()
	<-c.exited
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	return c.err
}

// Exited returns a channel closed when the child has exited.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// State returns the child's scheduler state from /proc: 'R' running, 'S'
// sleeping, 'T' stopped, 'Z' zombie, ...
func (c *Child) State() (byte, error) {
	st, err := procState(c.Pid)
	if err != nil {
		return 0, fmt.Errorf("testenv: state of child %s: %w", c.Name, err)
	}
	return st, nil
}

// Stderr returns what the child wrote on stderr so far.
func (c *Child) Stderr() string {
	w := c.cmd.Stderr.(*syncWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return c.stderr.String()
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
