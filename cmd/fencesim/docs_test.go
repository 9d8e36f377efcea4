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

// TestLessonTimesMatchOutput: every time the lesson's prose gives for the
// demo ("at 10.1 s") is a time the demo prints ("10.1s"), except the few
// it derives and names here, so the text and the output cannot drift
// apart (they once said 0.4 s and 0.3 s for the same read).
func TestLessonTimesMatchOutput(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	from, to := strings.Index(s, "## How to read it"), strings.Index(s, "## Why a heartbeat")
	if from < 0 || to < from {
		t.Fatal("fencing.md lost its sections")
	}
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(s[from:to], "")
	_, out, _ := runCmd(t)
	derived := map[string]string{
		"0.4": "A's read answer arrives a message after the storage served it at 0.3s",
		"3":   "the heartbeat interval",
		"2":   "A's work step",
		"15":  "the pause",
		"10":  "the TTL",
		"2.3": "A paused 2.3 s after the grant (2.4s - 0.1s)",
		"8.5": "the -pause of the next example",
		"5":   "the -pause of the short-pause example",
	}
	for _, m := range regexp.MustCompile(`(\d+(?:\.\d+)?) s\b`).FindAllStringSubmatch(prose, -1) {
		if _, ok := derived[m[1]]; ok {
			continue
		}
		if !strings.Contains(out, " "+m[1]+"s") && !strings.Contains(out, "at "+m[1]+"s") {
			t.Errorf("fencing.md says %q, which the demo's output never shows", m[0])
		}
	}
	if !strings.Contains(out, "    0.1s │ A:33") || !strings.Contains(out, "A was paused from 2.4s") {
		t.Errorf("the 2.3 s the lesson derives (grant at 0.1s, pause at 2.4s) no longer holds:\n%s", out)
	}
}
