package stdsql_test

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program that imports only stdsql links no database/sql driver (it
// brings its own) and not golang-migrate: no package stdsql depends on
// calls sql.Register, and none is golang-migrate's.
func TestImportsNoDriver(t *testing.T) {
	gocmd, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies:", err)
	}
	out, err := osexec.Command(gocmd, "list", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}",
		"github.com/fencekit/fencekit/sqlfence/stdsql").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sawSQL := false
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		path, dir, files := f[0], f[1], strings.Split(f[2], ",")
		sawSQL = sawSQL || path == "database/sql"
		if strings.Contains(path, "golang-migrate") || strings.Contains(path, "lib/pq") || strings.HasSuffix(path, "/stdlib") {
			t.Errorf("stdsql depends on %s", path)
		}
		if strings.HasPrefix(path, "database/sql") || f[2] == "" {
			continue
		}
		for _, name := range files {
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(src, []byte("sql.Register(")) {
				t.Errorf("stdsql depends on %s, whose %s registers a database/sql driver", path, name)
			}
		}
	}
	if !sawSQL {
		t.Fatal("stdsql does not depend on database/sql: the listing is not what this test expects")
	}
}
