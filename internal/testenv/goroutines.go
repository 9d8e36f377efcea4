package testenv

import (
	"bytes"
	"runtime"
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
