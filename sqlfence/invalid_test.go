package sqlfence_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// NewTable refuses bad names with an error matching fence.ErrInvalid that
// says "sqlfence:" once and shows the offending character, not one byte of
// it: before, NewTable("tablé", ...) reported byte 4 as 'Ã'.
func TestNewTableRefusesBadNames(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		table, key, ver, col string
		want                 string
	}{
		{"non-ASCII letter", "tablé", "id", "v", "body", `table name "tablé": byte 4 is 'é'`},
		{"non-ASCII column", "t", "id", "v", "naïve", `column 1 name "naïve": byte 2 is 'ï'`},
		{"not UTF-8", "t\xff", "id", "v", "body", `byte 1 is 0xff, not UTF-8`},
		{"U+FFFD itself", "t\uFFFD", "id", "v", "body", "byte 1 is '\uFFFD'"},
		{"empty key", "t", "", "v", "body", "key column name is empty"},
		{"three parts", "a.b.c", "id", "v", "body", "has 2 dots"},
		{"64 bytes", strings.Repeat("t", 64), "id", "v", "body", "64 bytes, more than PostgreSQL's 63"},
		{"16 KB", strings.Repeat("t", 16<<10), "id", "v", "body", "16384 bytes"},
		{"version is the key", "t", "id", "id", "body", `version column "id" is named twice (also the key column)`},
		{"column is the key", "t", "id", "v", "id", `column 1 "id" is named twice (also the key column)`},
	} {
		tbl, err := sqlfence.NewTable(tc.table, tc.key, tc.ver, tc.col)
		if tbl != nil || !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.want) ||
			!strings.HasPrefix(err.Error(), "sqlfence: ") || strings.Count(err.Error(), "fence:") != 1 || len(err.Error()) > 200 {
			t.Errorf("%s: NewTable = %v, %.300v; want a short error matching fence.ErrInvalid saying %q", tc.name, tbl, err, tc.want)
		}
	}
}
