package sqlfence_test

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A program that imports only sqlfence links neither golang-migrate nor a
// database/sql driver: no package sqlfence depends on is golang-migrate's,
// and none of those that import database/sql (pgx and pgtype do, for its
// Scanner and Null types) calls sql.Register.
func TestImportsNoMigrateNorDriver(t *testing.T) {
	gocmd, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies:", err)
	}
	out, err := osexec.Command(gocmd, "list", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{join .Imports \",\"}}",
		"github.com/fencekit/fencekit/sqlfence").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	importers := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		path, dir, files, imports := f[0], f[1], strings.Split(f[2], ","), strings.Split(f[3], ",")
		if strings.Contains(path, "golang-migrate") || strings.HasSuffix(path, "/migrations") {
			t.Errorf("sqlfence depends on %s", path)
		}
		if !slices.Contains(imports, "database/sql") {
			continue
		}
		importers++
		for _, name := range files {
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(src, []byte("sql.Register(")) {
				t.Errorf("sqlfence depends on %s, whose %s registers a database/sql driver", path, name)
			}
		}
	}
	if importers == 0 {
		t.Fatal("no dependency imports database/sql: the listing is not what this test expects")
	}
}
