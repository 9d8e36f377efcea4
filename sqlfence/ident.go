package sqlfence

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// maxIdentLen is PostgreSQL's NAMEDATALEN-1: longer names are silently
// truncated by the server, so two different names could mean one table.
const maxIdentLen = 63

// ErrInvalidIdentifier is returned (wrapped) by [NewTable] for a table or
// column name that is not a plain SQL identifier.
var ErrInvalidIdentifier = errors.New("sqlfence: invalid identifier")

// parseIdent checks that s is a plain identifier, [A-Za-z_][A-Za-z0-9_]* of
// at most 63 bytes, or, when qualified is true, optionally two of them joined
// by one dot (schema.table). It returns the parts for pgx.Identifier, which
// quotes them; quoting keeps the case, so names are case-sensitive. what
// names the argument in the error ("table", "key column", ...).
func parseIdent(what, s string, qualified bool) (pgx.Identifier, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: %s name is empty", ErrInvalidIdentifier, what)
	}
	parts := []string{s}
	if qualified {
		parts = strings.Split(s, ".")
		if len(parts) > 2 {
			return nil, fmt.Errorf("%w: %s name %q has %d dots; want name or schema.name", ErrInvalidIdentifier, what, s, len(parts)-1)
		}
	}
	for _, p := range parts {
		if err := checkIdentPart(p); err != nil {
			return nil, fmt.Errorf("%w: %s name %q: %v", ErrInvalidIdentifier, what, s, err)
		}
	}
	return pgx.Identifier(parts), nil
}

// checkIdentPart validates one dot-free part of an identifier.
func checkIdentPart(p string) error {
	switch {
	case p == "":
		return errors.New("empty part (a leading, trailing or doubled dot)")
	case len(p) > maxIdentLen:
		return fmt.Errorf("%d bytes, more than PostgreSQL's %d", len(p), maxIdentLen)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			if i == 0 && c >= '0' && c <= '9' {
				return errors.New("starts with a digit")
			}
			return fmt.Errorf("byte %d is %q; only letters, digits and _ are allowed", i, c)
		}
	}
	return nil
}
