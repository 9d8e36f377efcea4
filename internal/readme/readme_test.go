// Package readme runs the program README.md shows as a user's first fenced
// write, so that the README cannot drift from the API.
package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/internal/testenv"
)

// TestREADMEFirstWrite copies the README's first-write program into a
// module of its own (fencekit replaced by this checkout, every other module
// from the local module cache or else the machine's registry, with the
// checkout's go.sum) and runs it against the test
// servers: it must write once and see its stale write refused.
func TestREADMEFirstWrite(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- first-write:[^>]*-->\n```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no first-write program (a ```go block after <!-- first-write: ... -->)")
	}
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pg := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	dir := t.TempDir()
	gomod := "module example.com/firstwrite\n\ngo 1.26\n\nrequire github.com/fencekit/fencekit v0.3.0\n\nreplace github.com/fencekit/fencekit => " + top + "\n"
	// The checkout's go.sum holds every hash the program needs, so tidy
	// consults no checksum database (none is reachable offline).
	gosum, err := os.ReadFile(filepath.Join(top, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"go.mod": gomod, "go.sum": string(gosum), "main.go": string(m[1])} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Modules from the local cache first, then the machine's registry: a
	// fresh machine's cache lacks the go.mod files only tidy reads.
	goproxy := "file://" + filepath.ToSlash(filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")) + "," + goEnv(t, "GOPROXY")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY="+goproxy, "GOSUMDB=off", "GOWORK=off",
			"DATABASE_URL="+pg.URL, "REDIS_ADDR="+rdb.Addr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mod", "tidy")
	out := run("run", ".")
	if !regexp.MustCompile(`(?m)^wrote with token \d+$`).MatchString(out) || !strings.Contains(out, "stale write refused: true") {
		t.Fatalf("the README's program printed:\n%s\nwant \"wrote with token N\" and \"stale write refused: true\"", out)
	}
}

// goEnv is `go env name`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
