// Package valid checks what fencekit's packages are given (names, tokens)
// and makes their bad-input errors, which match [fence.ErrInvalid].
package valid

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
)

// invalidError is bad input: its message says what is wrong, once, and it
// matches [fence.ErrInvalid].
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == fence.ErrInvalid }

// Invalid returns an error for bad input whose message is format's, that
// matches [fence.ErrInvalid] (errors.Is). Packages start the message with
// their name, as their other errors do.
func Invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// MaxNameLen is the longest name [Name] accepts, in bytes: S3's
// limit for an object key, and far above any lease or resource name in use.
const MaxNameLen = 1024

// quoteMax is how many characters of a bad name an error shows.
const quoteMax = 40

// Name checks a name that fencekit keys by (a lease name, a guard
// row's resource, an object key): 1 to [MaxNameLen] bytes of valid UTF-8
// with no control character (NUL included). what names it in the message
// ("resource", "lease name", "key"). The error matches [fence.ErrInvalid], has no
// package prefix (wrap it with yours) and quotes at most the first 40
// characters of name, so that a 16 KB name gives a short error.
func Name(what, name string) error {
	switch {
	case name == "":
		return Invalid("%s is empty", what)
	case len(name) > MaxNameLen:
		return Invalid("%s %s is %d bytes, longer than %d", what, quote(name), len(name), MaxNameLen)
	}
	for i, r := range name {
		switch {
		case r == utf8.RuneError && !isRuneError(name[i:]):
			return Invalid("%s %s is not valid UTF-8 (byte %d)", what, quote(name), i)
		case unicode.IsControl(r):
			return Invalid("%s %s has a control character (%U) at byte %d", what, quote(name), r, i)
		}
	}
	return nil
}

// isRuneError reports whether s starts with a real U+FFFD, not a byte
// that is not UTF-8.
func isRuneError(s string) bool {
	_, size := utf8.DecodeRuneInString(s)
	return size == 3
}

// quote quotes at most quoteMax characters of s, with "..." after when it
// cuts; invalid bytes show as \x escapes, never as stray characters.
func quote(s string) string {
	n, cut := 0, len(s)
	for i := range s {
		if n == quoteMax {
			cut = i
			break
		}
		n++
	}
	if cut < len(s) {
		return fmt.Sprintf("%q...", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
