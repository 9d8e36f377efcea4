package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/internal/leasearg"
)

// testFlags is a flag set like bump's: a string, a bool and a duration.
func testFlags() (*flag.FlagSet, *string, *bool) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	to := fs.String("to", "", "")
	b := fs.Bool("json", false, "")
	timeoutFlag(fs)
	return fs, to, b
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		to   string
		json bool
	}{
		{[]string{"name", "--to", "5"}, []string{"name"}, "5", false},
		{[]string{"--to=5", "name", "-json"}, []string{"name"}, "5", true},
		{[]string{"a", "-json", "b"}, []string{"a", "b"}, "", true},
		{[]string{"-json", "--", "-x", "--to"}, []string{"-x", "--to"}, "", true},
		{[]string{"a", "--", "-json"}, []string{"a", "-json"}, "", false},
		{[]string{"-to", "--", "n"}, []string{"n"}, "--", false}, // "--" as a flag's value
		{[]string{"-", "n"}, []string{"-", "n"}, "", false},
		{nil, nil, "", false},
	} {
		fs, to, b := testFlags()
		pos, err := parseArgs(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *to != tc.to || *b != tc.json {
			t.Errorf("parseArgs(%q) = %q, %v; to=%q json=%v; want %q to=%q json=%v", tc.args, pos, err, *to, *b, tc.pos, tc.to, tc.json)
		}
	}
	for _, args := range [][]string{{"-nope"}, {"n", "--to"}, {"-timeout", "x"}, {"-json=maybe"}} {
		fs, _, _ := testFlags()
		var ue *usageError
		if _, err := parseArgs(fs, args); !errors.As(err, &ue) {
			t.Errorf("parseArgs(%q) = %v, want a usage error", args, err)
		}
	}
	fs, _, _ := testFlags()
	if _, err := parseArgs(fs, []string{"n", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// FuzzParseArgs checks, for any command line, that parseArgs does not
// panic, that a success returns only arguments of the command line in
// their order, and that a command line built from positional arguments
// (none starting with "-") and flags placed anywhere parses back to them.
func FuzzParseArgs(f *testing.F) {
	f.Add("name\x00--to\x005", "5", uint8(1))
	f.Add("-json\x00--\x00-x", "", uint8(0))
	f.Add("a\x00b\x00c", "--", uint8(7))
	f.Fuzz(func(t *testing.T, joined, value string, where uint8) {
		args := strings.Split(joined, "\x00")
		fs, _, _ := testFlags()
		pos, err := parseArgs(fs, args)
		if err == nil && !isSubsequence(pos, args) {
			t.Fatalf("parseArgs(%q) = %q: not arguments of the command line in order", args, pos)
		}

		// Round trip: positionals that are not flags, -to value inserted
		// at a position, -json at another.
		var want []string
		for _, a := range args {
			if a != "" && a[0] != '-' {
				want = append(want, a)
			}
		}
		line := slices.Clone(want)
		i := int(where) % (len(line) + 1)
		line = slices.Insert(line, i, "-to", value)
		j := int(where/16) % (len(line) + 1)
		if j > i && j < i+2 {
			j = i + 2 // not between -to and its value
		}
		line = slices.Insert(line, j, "-json")
		fs, to, b := testFlags()
		got, err := parseArgs(fs, line)
		if err != nil || !slices.Equal(got, want) || *to != value || !*b {
			t.Fatalf("parseArgs(%q) = %q, %v, to=%q json=%v; want %q, to=%q, json", line, got, err, *to, *b, want, value)
		}
	})
}

// isSubsequence reports whether sub's elements appear in s in order.
func isSubsequence(sub, s []string) bool {
	for _, x := range s {
		if len(sub) > 0 && sub[0] == x {
			sub = sub[1:]
		}
	}
	return len(sub) == 0
}

func TestParseTarget(t *testing.T) {
	for s, want := range map[string]uint64{"1": 1, "9007199254740990": leasearg.MaxBump, "1796107659920029": 1796107659920029} {
		if got, err := parseTarget(s); err != nil || got != want {
			t.Errorf("parseTarget(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", "1e9", "9007199254740991", "18446744073709551616", " 1"} {
		if _, err := parseTarget(s); err == nil {
			t.Errorf("parseTarget(%q) accepted", s)
		}
	}
}
