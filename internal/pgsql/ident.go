package pgsql

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fencekit/fencekit/internal/valid"
)

// maxIdentLen is PostgreSQL's NAMEDATALEN-1: longer names are silently
// truncated by the server, so two different names could mean one table.
const maxIdentLen = 63

// ParseIdent checks that s is a plain identifier, [A-Za-z_][A-Za-z0-9_]* of
// at most 63 bytes, or, when qualified is true, optionally two of them joined
// by one dot (schema.table). It returns s quoted ("schema"."table"); quoting
// keeps the case, so names are case-sensitive. what names the argument in
// the error ("table", "key column", ...), which starts with pkg and matches
// [fence.ErrInvalid].
func ParseIdent(pkg, what, s string, qualified bool) (string, error) {
	if s == "" {
		return "", valid.Invalid("%s: %s name is empty", pkg, what)
	}
	parts := []string{s}
	if qualified {
		parts = strings.Split(s, ".")
		if len(parts) > 2 {
			return "", valid.Invalid("%s: %s name %.40q has %d dots; want name or schema.name", pkg, what, s, len(parts)-1)
		}
	}
	for _, p := range parts {
		if err := checkIdentPart(p); err != nil {
			return "", valid.Invalid("%s: %s name %.40q: %v", pkg, what, s, err)
		}
	}
	// The parts hold no quote to escape.
	return `"` + strings.Join(parts, `"."`) + `"`, nil
}

// checkIdentPart validates one dot-free part of an identifier.
func checkIdentPart(p string) error {
	switch {
	case p == "":
		return errors.New("empty part (a leading, trailing or doubled dot)")
	case len(p) > maxIdentLen:
		return fmt.Errorf("%d bytes, more than PostgreSQL's %d", len(p), maxIdentLen)
	}
	for i, c := range p {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		switch {
		case ok:
		case i == 0 && c >= '0' && c <= '9':
			return errors.New("starts with a digit")
		case c == utf8.RuneError && !strings.HasPrefix(p[i:], "\uFFFD"): // an invalid byte, not U+FFFD itself
			return fmt.Errorf("byte %d is %#x, not UTF-8; only ASCII letters, digits and _ are allowed", i, p[i])
		default:
			return fmt.Errorf("byte %d is %q; only ASCII letters, digits and _ are allowed", i, c)
		}
	}
	return nil
}
