package migrations_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/migrations"
)

var name = regexp.MustCompile(`^(\d{6})_([a-z0-9_]+)\.(up|down)\.sql$`)

// TestFilesPaired checks that every embedded file follows golang-migrate's
// naming, that each version has exactly one up and one down file, and that
// versions run 1, 2, 3... without gaps.
func TestFilesPaired(t *testing.T) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]map[string]bool{}
	for _, e := range entries {
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			t.Errorf("%s: not NNNNNN_name.up.sql or NNNNNN_name.down.sql", e.Name())
			continue
		}
		body, err := fs.ReadFile(migrations.FS, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(body)) == "" {
			t.Errorf("%s is empty", e.Name())
		}
		if dirs[m[1]] == nil {
			dirs[m[1]] = map[string]bool{}
		}
		dirs[m[1]][m[3]] = true
	}
	if len(dirs) == 0 {
		t.Fatal("no migrations embedded")
	}
	for v := 1; v <= len(dirs); v++ {
		key := fmt.Sprintf("%06d", v)
		d, ok := dirs[key]
		if !ok {
			t.Errorf("version %s missing (versions must be consecutive)", key)
			continue
		}
		if !d["up"] || !d["down"] {
			t.Errorf("version %s: up=%v down=%v, want both", key, d["up"], d["down"])
		}
	}
}
