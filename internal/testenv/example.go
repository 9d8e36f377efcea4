package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// ExampleTB returns a [testing.TB] for an Example function, which is given
// none, and the function that runs its cleanups:
//
//	func ExampleStore_Put() {
//		tb, done := testenv.ExampleTB("ExampleStore_Put")
//		defer done()
//		env := testenv.S3(tb)
//		...
//
// Examples cannot be skipped, so a server that is missing ends the test
// binary with exit status 1 and a message naming the server and the variable
// to set, whether or not FENCEKIT_REQUIRE_SERVERS is set: the package's
// examples need the servers, like its tests under `make test`. Any other
// failure does the same. Methods the harness does not use panic.
func ExampleTB(name string) (testing.TB, func()) {
	tb := &exampleTB{name: name}
	return tb, tb.done
}

// done runs the cleanups and ends the binary with status 1 if Errorf was
// called, by the example or by a cleanup.
func (t *exampleTB) done() {
	t.runCleanups()
	if t.Failed() {
		t.exit("failed (see the errors above)")
	}
}

type exampleTB struct {
	testing.TB // nil: methods not overridden below panic
	name       string
	mu         sync.Mutex
	cleanups   []func()
	failed     bool
}

func (t *exampleTB) Helper()      {}
func (t *exampleTB) Name() string { return t.name }
func (t *exampleTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *exampleTB) Log(a ...any)            { fmt.Fprintln(os.Stderr, a...) }
func (t *exampleTB) Logf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (t *exampleTB) Errorf(f string, a ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s: "+f+"\n", append([]any{t.name}, a...)...)
}
func (t *exampleTB) Fatal(a ...any)            { t.exit(fmt.Sprint(a...)) }
func (t *exampleTB) Fatalf(f string, a ...any) { t.exit(fmt.Sprintf(f, a...)) }
func (t *exampleTB) Skip(a ...any) {
	t.exit("an example cannot be skipped, so it fails: " + fmt.Sprint(a...))
}
func (t *exampleTB) TempDir() string {
	dir, err := os.MkdirTemp("", "fencekit-example-")
	if err != nil {
		t.Fatalf("testenv: temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
func (t *exampleTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *exampleTB) runCleanups() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}

func (t *exampleTB) exit(msg string) {
	fmt.Fprintf(os.Stderr, "--- FAIL: %s: %s\n", t.name, msg)
	t.runCleanups()
	stopShared()
	os.Exit(1)
}
