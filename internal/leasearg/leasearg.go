// Package leasearg checks what lease and its issuers are given: lease
// names, key prefixes, Names patterns and Bump targets. Its errors match
// fence.ErrInvalid and have no package prefix: callers add theirs
// ("redislease: ...", "lease: Bump: name is empty").
package leasearg

import (
	"github.com/fencekit/fencekit/internal/valid"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
)

// DefaultKeyPrefix is the first part of every key, row and node name when
// lease.Options.KeyPrefix is "".
const DefaultKeyPrefix = "fencekit"

// MaxKeyPrefixLen is the longest lease.Options.KeyPrefix, in bytes.
const MaxKeyPrefixLen = 64

// Name reports whether name can name a lease: a name fence.ValidateName
// accepts (its length limit is the one limit of names), without '{' or
// '}' (they would change the Redis Cluster hash tag) and without
// whitespace; ':' is allowed.
func Name(name string) error { return checkKeyPart("name", name) }

// KeyPrefix returns prefix, or [DefaultKeyPrefix] when prefix is "", if it
// can be lease.Options.KeyPrefix: at most [MaxKeyPrefixLen] bytes, and
// otherwise the rule of [Name].
func KeyPrefix(prefix string) (string, error) {
	if prefix == "" {
		return DefaultKeyPrefix, nil
	}
	if len(prefix) > MaxKeyPrefixLen {
		return "", valid.Invalid("key prefix is %d bytes long, the maximum is %d", len(prefix), MaxKeyPrefixLen)
	}
	return prefix, checkKeyPart("key prefix", prefix)
}

// Pattern checks the glob pattern of a Names call: not empty, valid UTF-8,
// and without a character no lease name has (a brace, whitespace, a
// control character), so that a pattern that can match nothing is an
// error rather than an empty list.
func Pattern(pattern string) error {
	if pattern == "" {
		return valid.Invalid("pattern is empty: want a glob, * for every lease")
	}
	if !utf8.ValidString(pattern) {
		return valid.Invalid("pattern %.40q is not valid UTF-8", pattern)
	}
	for i, r := range pattern {
		switch {
		case r == '{' || r == '}':
			return valid.Invalid("pattern %.40q has %q at byte %d: lease names have no braces", pattern, r, i)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return valid.Invalid("pattern %.40q has %U at byte %d: lease names have no whitespace or control characters", pattern, r, i)
		}
	}
	return nil
}

// checkKeyPart checks a lease name or key prefix (what names it).
func checkKeyPart(what, s string) error {
	if err := valid.Name(what, s); err != nil {
		return err
	}
	for i, r := range s {
		switch {
		case r == '{' || r == '}':
			return valid.Invalid("%s %.40q has %q at byte %d (braces would change the Redis Cluster hash tag)", what, s, r, i)
		case unicode.IsSpace(r) || r == 0xFFFE || r == 0xFEFF:
			return valid.Invalid("%s %.40q has whitespace %U at byte %d", what, s, r, i)
		}
	}
	return nil
}

// MaxAhead is how far above its server's clock an issuer's Bump may raise
// a name's tokens: the allowance for the clock of the machine that runs
// fencectl bump --time. A token counter ahead of the clock is not
// recovered if the server loses it: the next grant's token is the
// server's time, below the lost counter until the clock passes it.
const MaxAhead = time.Second

// MaxBump is the largest token a Bump may ask for, on every issuer:
// Redis's acquire.lua issues counter+1 and refuses a counter at or above
// 2^53-1 (Lua's doubles are exact up to 2^53). It is the year 2255 in µs.
const MaxBump = 1<<53 - 2

// CheckAhead returns nil when to is at most [MaxAhead] above now, the
// issuer's server time, and otherwise an error that says how far ahead to
// is and what to do instead.
func CheckAhead(to fence.Token, now time.Time) error {
	at := time.UnixMicro(int64(min(to, valid.MaxToken)))
	if ahead := at.Sub(now); ahead > MaxAhead {
		return valid.Invalid("token %v is %v ahead of the server's clock (%s), more than %v: "+
			"a token counter ahead of the clock is not recovered if the server loses it; "+
			"bump to the current time (fencectl bump --time), or wait until the server's clock passes %s",
			to, ahead.Round(time.Second), now.UTC().Format(time.RFC3339), MaxAhead, at.UTC().Format(time.RFC3339))
	}
	return nil
}
