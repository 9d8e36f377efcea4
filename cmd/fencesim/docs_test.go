package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite the fencesim output blocks of the docs pages from the current output")

// docPages are the pages whose fencesim output blocks must be real output.
var docPages = []string{"../../docs/fencing.md", "../../docs/simulator.md"}

// docBlock is a ```text block of a docs page that starts with a fencesim
// command line: "$ go run ./cmd/fencesim ARGS".
var docBlock = regexp.MustCompile("(?s)```text\n\\$ go run \\./cmd/fencesim([^\n]*)\n(.*?)```")

// docOutput is what a block of the command line with args must show: the
// output from the title on (a scenario's story is the page's prose), or,
// when the block's body starts with "...", the summaries only.
func docOutput(t *testing.T, args []string, elided bool) string {
	t.Helper()
	code, out, errs := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("fencesim %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	if len(args) == 0 || args[0] != "explore" {
		if i := strings.Index(out, "\nfencesim "); i >= 0 {
			out = out[i+1:]
		}
	}
	if elided {
		// The summaries follow the last blank line before the first
		// heading line ("Fencing OFF:" and the like).
		m := regexp.MustCompile(`(?m)^\n[A-Z][^\n]*:\n  •`).FindStringIndex(out)
		if m == nil {
			t.Fatalf("fencesim %s: no summary to elide to", strings.Join(args, " "))
		}
		out = "...\n" + out[m[0]+1:]
	}
	return out
}

// TestDocsShowRealOutput keeps the docs honest: every block that shows a
// fencesim command's output is what the command prints today, byte for
// byte. Run with -update to rewrite the blocks after a deliberate change.
func TestDocsShowRealOutput(t *testing.T) {
	for _, page := range docPages {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatalf("docs page: %v", err)
		}
		blocks := 0
		updated := docBlock.ReplaceAllStringFunc(string(doc), func(block string) string {
			m := docBlock.FindStringSubmatch(block)
			args := strings.Fields(m[1])
			if (testing.Short() || raceEnabled) && len(args) > 0 && args[0] == "explore" && !*updateDocs {
				return block
			}
			blocks++
			want := docOutput(t, args, strings.HasPrefix(m[2], "...\n"))
			if m[2] != want && !*updateDocs {
				t.Errorf("%s: the block of fencesim %s is not the current output; run go test ./cmd/fencesim -run TestDocsShowRealOutput -update\nwant:\n%s\ngot:\n%s",
					page, strings.Join(args, " "), want, m[2])
			}
			return "```text\n$ go run ./cmd/fencesim" + m[1] + "\n" + want + "```"
		})
		if *updateDocs && updated != string(doc) {
			if err := os.WriteFile(page, []byte(updated), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s", page)
		}
		if blocks == 0 && !testing.Short() && !raceEnabled {
			t.Errorf("%s shows no fencesim output", page)
		}
	}
}
