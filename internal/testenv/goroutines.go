package testenv

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// CheckGoroutines fails when, within three seconds, the number of
// goroutines does not come back to at most base: something left a
// goroutine behind.
func CheckGoroutines(tb testing.TB, base int) {
	tb.Helper()
	var n int
	for range 300 {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	tb.Fatalf("goroutine leak: %d goroutines, %d before\n%s", n, base, buf[:runtime.Stack(buf, true)])
}

// CheckNoGoroutineOf fails when, within a second, some goroutine other
// than the caller's still runs a function of a package whose import path
// starts with one of prefixes (their tests' functions aside): something
// closed before the call left a goroutine of those packages behind. Unlike
// CheckGoroutines it counts no one else's goroutines (a driver's, the
// runtime's), so it needs no baseline; goroutines of the packages that
// tests running in parallel started make it fail.
func CheckNoGoroutineOf(tb testing.TB, prefixes ...string) {
	tb.Helper()
	var left []string
	for range 100 {
		if left = goroutinesOf(prefixes); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("%d goroutines of %v left behind:\n\n%s", len(left), prefixes, strings.Join(left, "\n\n"))
}

// goroutinesOf returns the stacks of the goroutines, the caller's aside,
// with a frame of a function of a package under one of prefixes, in a
// file that is not a test.
func goroutinesOf(prefixes []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	var left []string
	for _, g := range stacks[1:] { // the first is the caller's
		lines := strings.Split(g, "\n")
		for i := 1; i+1 < len(lines); i++ {
			fn, file := strings.TrimPrefix(lines[i], "created by "), lines[i+1]
			if hasPrefix(fn, prefixes) && strings.HasPrefix(file, "\t") && !strings.Contains(file, "_test.go:") {
				left = append(left, g)
				break
			}
		}
	}
	return left
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: a log destination
// that a test reads while goroutines write.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
