package fence

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid is matched by every error fencekit returns for bad input: an
// empty or malformed name, a zero token, a nil client, an option out of
// range. Nothing changed, and nothing was sent unless the call's doc says
// otherwise (blobfence's Retire reads the object first): fix the call, a
// retry cannot help.
var ErrInvalid = errors.New("fence: invalid argument")

// invalidError is bad input: its message says what is wrong, once, and it
// matches [ErrInvalid].
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// Invalid returns an error for bad input whose message is format's, that
// matches [ErrInvalid] (errors.Is). Adapters start the message with their
// package name, as their other errors do.
func Invalid(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// MaxNameLen is the longest name [ValidateName] accepts, in bytes: a lease
// name, a resource or an object key (S3 allows 1,024), far above any in use.
const MaxNameLen = 512

// quoteMax is how many characters of a bad name an error shows.
const quoteMax = 40

// ValidateName checks a name that fencekit keys by (a lease name, a guard
// row's resource, an object key): 1 to [MaxNameLen] bytes of valid UTF-8
// with no control character (NUL included). what names it in the message
// ("resource", "lease name", "key"). The error matches [ErrInvalid], has no
// package prefix (wrap it with yours) and quotes at most the first 40
// characters of name, so that a 16 KB name gives a short error.
func ValidateName(what, name string) error {
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
