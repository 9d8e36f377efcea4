package main

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strconv"
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
// output from the title on (a scenario's story is the page's prose).
func docOutput(t *testing.T, args []string) string {
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
	return out
}

// missingLines returns the first line of an elided block ("...\n" then
// some lines of the output) that the output does not have in that order,
// or "" when every line is there.
func missingLines(block, out string) string {
	rest := strings.Split(out, "\n")
	for _, line := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(block, "...\n"), "\n"), "\n") {
		if line == "..." { // lines left out
			continue
		}
		i := slices.Index(rest, line)
		if i < 0 {
			return line
		}
		rest = rest[i+1:]
	}
	return ""
}

// TestDocsShowRealOutput keeps the docs honest: every block that shows a
// fencesim command's output is what the command prints today, byte for
// byte; a block that starts with "..." shows some of its lines (a "..."
// line marks more left out), each exactly and in order. Run with -update
// to rewrite the whole blocks after a deliberate change (elided blocks are
// checked, never rewritten).
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
			out := docOutput(t, args)
			if strings.HasPrefix(m[2], "...\n") {
				if line := missingLines(m[2], out); line != "" {
					t.Errorf("%s: the block of fencesim %s shows a line the output lacks (or out of order):\n%s\noutput:\n%s",
						page, strings.Join(args, " "), line, out)
				}
				return block
			}
			if m[2] != out && !*updateDocs {
				t.Errorf("%s: the block of fencesim %s is not the current output; run go test ./cmd/fencesim -run TestDocsShowRealOutput -update\nwant:\n%s\ngot:\n%s",
					page, strings.Join(args, " "), out, m[2])
			}
			return "```text\n$ go run ./cmd/fencesim" + m[1] + "\n" + out + "```"
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

// TestDocsExcerptsKeepTheirRuns: an excerpt of fencesim output never
// shows two runs' summary lines without the run's heading ("Fencing OFF:")
// between them, where they read as one run contradicting itself; and
// the lesson's demo excerpt shows A's read at 0.3 s, the old read that
// A's late write is based on.
func TestDocsExcerptsKeepTheirRuns(t *testing.T) {
	for _, page := range docPages {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docBlock.FindAllStringSubmatch(string(doc), -1) {
			finals := 0
			for _, line := range strings.Split(m[2], "\n") {
				switch {
				case strings.HasPrefix(line, "  • Final value"):
					finals++
					if finals > 1 {
						t.Errorf("%s: fencesim%s: a second run's %q follows the first's with no heading between", page, m[1], line)
					}
				case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
					finals = 0
				}
			}
		}
	}
	demo := docBlock.FindStringSubmatch(readDoc(t, "docs/fencing.md"))
	if demo == nil || !regexp.MustCompile(`(?m)^ +0\.3s │ A:33 +┆ read ""`).MatchString(demo[2]) {
		t.Errorf("the lesson's demo excerpt leaves out A's read at 0.3s")
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
	from, to := strings.Index(s, "## What went wrong"), strings.Index(s, "## Why the check must be atomic")
	if from < 0 || to < from {
		t.Fatal("fencing.md lost its sections")
	}
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(s[from:to], "")
	_, out, _ := runCmd(t)
	derived := map[string]string{
		"8.5": "the -pause of the next example",
		"8":   "the longest safe pause: B's read (10.5s) - A's pause (2.4s) - A's write in flight (0.1s)",
		"0.4": "B's time to take the lease and read after it expired: 10.5s - 10.1s",
		"5":   "the -pause of the short-TTL example",
		"4":   "the -ttl of the short-TTL example",
	}
	for _, m := range regexp.MustCompile(`(\d+(?:\.\d+)?) s\b`).FindAllStringSubmatch(prose, -1) {
		if _, ok := derived[m[1]]; ok {
			continue
		}
		if !strings.Contains(out, " "+m[1]+"s") && !strings.Contains(out, "at "+m[1]+"s") {
			t.Errorf("fencing.md says %q, which the demo's output never shows", m[0])
		}
	}
	if !strings.Contains(out, "expired at 10.1s") || !strings.Contains(out, "A was paused from 2.4s") {
		t.Errorf("the 7.7 s the lesson derives (pause at 2.4s, expiry at 10.1s) no longer holds:\n%s", out)
	}
}

// readDoc returns a page of the repository, relative to the repository root.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLessonLength: README.md and docs/fencing.md, the lesson a newcomer
// reads, stay within 2,000 words together (as wc -w counts them), and the
// README promises no reading time that no trial has measured.
func TestLessonLength(t *testing.T) {
	readme := readDoc(t, "README.md")
	words := len(strings.Fields(readme)) + len(strings.Fields(readDoc(t, "docs/fencing.md")))
	if words > 2000 {
		t.Errorf("README.md and docs/fencing.md have %d words together, over 2,000", words)
	}
	if m := regexp.MustCompile(`(?i)[^.\n]*\bin (ten|\d+) minutes\b[^.\n]*`).FindString(readme); m != "" {
		t.Errorf("README.md promises a reading time: %q", m)
	}
}

// TestLessonAnswers: docs/fencing.md answers, in its own words, each
// question a student must be able to answer after the lesson.
func TestLessonAnswers(t *testing.T) {
	doc := readDoc(t, "docs/fencing.md")
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, "")
	prose = strings.Join(strings.Fields(prose), " ") // one line: phrases may wrap
	for question, phrase := range map[string]string{
		"what is the rule":                       "Refuses a write whose token is older",
		"why must the check be atomic":           "Checks and writes in one step",
		"why is A refused after B released":      "Releasing the lease does not lower the token the storage keeps",
		"why does a shorter TTL not help":        "A shorter TTL only lets a shorter pause outlast it",
		"why the claim at the read":              "Claims at the read",
		"where do real tokens come from":         "max(counter + 1, server time in microseconds)",
		"what if Redis loses the counter":        "restarts without persistence and loses the counter",
		"is an equal token accepted":             "an equal one, the same holder again, passes",
		"what does the claim do to older reads":  "older reads and writes are refused",
		"what if the clock goes back":            "With the counter kept, a clock going back is harmless",
		"why 33 and not a real token":            "starts at 33 to stay readable",
		"why a lost accepted write matters":      "was told its write succeeded",
		"side effects":                           "Side effects outside the storage",
		"storage that does not check":            "Storage that does not check tokens",
		"late writes the fenced map still shows": "reached the storage before any newer token",
		// Student trial 6: "decides" what; refused until the clock does
		// what; what -fencing claim runs.
		"what does where A's write lands decide":    "lands decides the outcome",
		"when does a clock gone back stop refusing": "until the clock passes the last token",
		"what does -fencing claim run":              "Both rules (`claim`, right)",
		// Student trial 7: why a read is refused; why not a longer TTL.
		"why is an older read refused": "an old holder cannot act on data the new one is changing",
		"why is a longer TTL no fix":   "A longer TTL is no fix: pauses have no upper bound",
		"what does a longer TTL cost":  "it only makes failover slower",
		// Student trip after trial 8: what the violation map shows; whether
		// the demo's outcome holds for a holder paused inside InTx.
		"what to look at in the violation map": "writes are lost (\"lost update\", \"tokens went backwards\") in every panel but fencekit's",
		"a holder paused inside InTx":          "B's claim waits until A's transaction ends",
	} {
		if !strings.Contains(prose, phrase) {
			t.Errorf("docs/fencing.md does not answer %q (no %q)", question, phrase)
		}
	}
}

// TestLessonPauseBands: each row of the lesson's pause table (pauses,
// where A's late write lands, the verdict with fencing off and the write
// it loses) is what fencesim prints for each pause, and fencing on is safe
// for all of them.
func TestLessonPauseBands(t *testing.T) {
	doc := readDoc(t, "docs/fencing.md")
	rows := regexp.MustCompile(`(?m)^\| ([\d.]+s(?:, [\d.]+s)*) \| ([^|]+) \| ([A-Z ]+?)(?: \((\w+) lost\))? \|$`).FindAllStringSubmatch(doc, -1)
	if len(rows) != 3 {
		t.Fatalf("docs/fencing.md has %d rows of pause bands, want 3 (safe, A's write lost, B's write lost)", len(rows))
	}
	for _, row := range rows {
		row = []string{row[0], row[1], row[3], row[4], row[2]}
		for _, pause := range strings.Split(row[1], ", ") {
			_, out, _ := runCmd(t, "-pause", pause)
			if where := landing(t, out); where != row[4] {
				t.Errorf("-pause %s: the table says A's write lands %q; fencesim prints it %s", pause, row[4], where)
			}
			if !strings.Contains(out, "Fencing OFF:\n  • "+row[2]) {
				t.Errorf("-pause %s: fencing off is not %s:\n%s", pause, row[2], out)
			}
			lost := regexp.MustCompile(`write (\w+) \(token \d+, accepted at [\d.]+s\) is LOST`).FindStringSubmatch(out)
			switch {
			case row[2] != "SAFE" && (lost == nil || lost[1] != row[3]):
				t.Errorf("-pause %s: the table says %q is lost; fencesim says %q", pause, row[3], lost)
			case row[2] == "SAFE" && lost != nil:
				t.Errorf("-pause %s: the table says SAFE; fencesim loses %s", pause, lost[1])
			}
			if !strings.Contains(out, "Fencing ON:\n  • SAFE") {
				t.Errorf("-pause %s: fencing on is not safe:\n%s", pause, out)
			}
		}
	}
}

// landing says where A's write lands in the demo's printed timeline, by
// the times printed: before B's read, between B's read and B's write, or
// after B's write ("at the same time as ..." when the two print alike).
func landing(t *testing.T, out string) string {
	t.Helper()
	at := func(re string) string {
		m := regexp.MustCompile(`(?m)^ *([\d.]+s) │.*` + re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no line matches %s in:\n%s", re, out)
		}
		return m[1]
	}
	secs := func(s string) float64 { f, _ := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64); return f }
	a, read, b := at(`write A1/`), at(`B:34 +┆.*read "`), at(`write B1/`)
	switch {
	case a == read:
		return "at the same time as B's read (" + a + ")"
	case a == b:
		return "at the same time as B's write (" + a + ")"
	case secs(a) < secs(read):
		return "before B's read"
	case secs(a) < secs(b):
		return "between B's read and B's write"
	}
	return "after B's write"
}

// TestExploreExplainsLateWrites: explore's row of late writes accepted,
// which stays above 0 with the claim on, says in a footnote what those
// writes are, so that it does not read as fencing failing.
func TestExploreExplainsLateWrites(t *testing.T) {
	if raceEnabled {
		t.Skip("10,000 schedules: too slow under the race detector")
	}
	_, out, _ := runCmd(t, "explore")
	row := regexp.MustCompile(`(?m)^  runs that accepted a write on an expired lease \(†\) +\d+ +(\d+)$`).FindStringSubmatch(out)
	if row == nil || row[1] == "0" {
		t.Fatalf("no marked row of late writes with a count above 0 for the claim:\n%s", out)
	}
	if !strings.Contains(out, "\n  (†) the write check accepts a late write only while the storage has seen no newer token: the rule allows it\n") {
		t.Errorf("no footnote says what the late writes accepted with fencing are:\n%s", out)
	}
}

// TestDemoSaysWhyTokensAreSmall: the demo, whose tokens are 33 and 34,
// says that real tokens are microsecond timestamps.
func TestDemoSaysWhyTokensAreSmall(t *testing.T) {
	_, out, _ := runCmd(t)
	if !strings.Contains(out, "Tokens start at 33 to stay readable; fencekit's Redis and PostgreSQL leases issue microsecond timestamps (about 1.8e15).\n") {
		t.Errorf("the demo does not say why its tokens are 33 and 34:\n%s", out)
	}
}

// TestLessonPauseThreshold: the lesson's sentence under the pause table
// names the pause from which a write is lost ("any pause over N s"),
// and that is what fencesim prints: N is safe, a little more loses a
// write; the table's safe pauses lie below it and its losing ones above.
func TestLessonPauseThreshold(t *testing.T) {
	doc := readDoc(t, "docs/fencing.md")
	prose := strings.Join(strings.Fields(regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, "")), " ")
	m := regexp.MustCompile(`[Aa]ny pause over ([\d.]+) s loses a write`).FindStringSubmatch(prose)
	if m == nil {
		t.Fatal(`docs/fencing.md names no threshold ("any pause over N s loses a write")`)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	for pause, want := range map[string]string{m[1] + "s": "SAFE", strconv.FormatFloat(n+0.05, 'f', -1, 64) + "s": "A WRITE WAS LOST"} {
		if _, out, _ := runCmd(t, "-pause", pause); !strings.Contains(out, "Fencing OFF:\n  • "+want) {
			t.Errorf("-pause %s: fencing off is not %s, so the threshold is not %s s:\n%s", pause, want, m[1], out)
		}
	}
	for _, row := range regexp.MustCompile(`(?m)^\| ([\d.]+s(?:, [\d.]+s)*) \| [^|]+ \| ([A-Z ]+)`).FindAllStringSubmatch(doc, -1) {
		for _, p := range strings.Split(row[1], ", ") {
			f, _ := strconv.ParseFloat(strings.TrimSuffix(p, "s"), 64)
			if (strings.TrimSpace(row[2]) == "SAFE") != (f <= n) {
				t.Errorf("the table's %s is %s, on the wrong side of the %s s threshold", p, row[2], m[1])
			}
		}
	}
}

// TestLessonTimesInDemoExcerpt: each time "What went wrong" gives ("at
// 17.6 s") is a row of the demo excerpt above it, so that the reader
// finds the moment the prose names.
func TestLessonTimesInDemoExcerpt(t *testing.T) {
	doc := readDoc(t, "docs/fencing.md")
	demo := docBlock.FindStringSubmatch(doc)
	from, to := strings.Index(doc, "## What went wrong"), strings.Index(doc, "## The rule")
	if demo == nil || from < 0 || to < from {
		t.Fatal("fencing.md lost its demo excerpt or its sections")
	}
	for _, m := range regexp.MustCompile(`(\d+(?:\.\d+)?) s\b`).FindAllStringSubmatch(doc[from:to], -1) {
		if !regexp.MustCompile(`(?m)^ +` + regexp.QuoteMeta(m[1]) + `s │`).MatchString(demo[2]) {
			t.Errorf("\"What went wrong\" says %q; the demo excerpt has no row at %ss", m[0], m[1])
		}
	}
}

// TestREADMERuleHasTheClaim: the README's one-line rule says that the
// storage keeps the tokens of reads too (the claim), not only of writes,
// which the lesson shows to lose a write on its own.
func TestREADMERuleHasTheClaim(t *testing.T) {
	readme := strings.Join(strings.Fields(readDoc(t, "README.md")), " ")
	m := regexp.MustCompile(`\*\*the storage rejects[^*]*\*\*`).FindString(readme)
	if m == "" {
		t.Fatal("README.md states no rule in bold")
	}
	if !regexp.MustCompile(`\breads?\b`).MatchString(m) {
		t.Errorf("README.md's rule %q names only writes: a token seen at a read (the claim) is left out", m)
	}
}

// TestExploreExplainsDivergingCounts: explore runs the same schedules
// with each storage, yet its count of writes differs between them (a
// refused client ends its job early, and the message delays and step
// lengths drawn after that differ); the row is marked and a footnote says so, so
// that the difference does not read as a fault.
func TestExploreExplainsDivergingCounts(t *testing.T) {
	if raceEnabled {
		t.Skip("10,000 schedules: too slow under the race detector")
	}
	_, out, _ := runCmd(t, "explore")
	row := regexp.MustCompile(`(?m)^  writes decided by the storage \(‡\) +(\d+) +(\d+)$`).FindStringSubmatch(out)
	if row == nil {
		t.Fatalf("no marked row of writes decided:\n%s", out)
	}
	if row[1] == row[2] {
		t.Logf("the counts agree (%s) for these schedules", row[1])
	}
	if !strings.Contains(out, "\n  (‡) same pauses and crashes; a refused client ends its job early, so later delays differ\n") {
		t.Errorf("no footnote says why the counts differ between storages:\n%s", out)
	}
}

// TestREADMESaysClaimBeforeItsCode: the README's opening names the claim
// (a read's token, which the storage keeps) before its first program uses
// the word ("InTx claims, then writes"); student trial 6 met "claim" there
// undefined.
func TestREADMESaysClaimBeforeItsCode(t *testing.T) {
	readme := readDoc(t, "README.md")
	code := strings.Index(readme, "```")
	if i := strings.Index(strings.ToLower(readme), "claim"); i < 0 || code < 0 || i > code {
		t.Errorf("README.md first says \"claim\" at byte %d, after its first program (byte %d)", i, code)
	}
}

// TestLessonTTLCommands: each fencesim command the TTL section gives with
// its verdict ("`-ttl 20s`: SAFE", "`-pause 5s -ttl 4s` loses B's write")
// prints that verdict with fencing off, and fencing on is safe.
func TestLessonTTLCommands(t *testing.T) {
	doc := readDoc(t, "docs/fencing.md")
	from, to := strings.Index(doc, "## Why no TTL or heartbeat helps"), strings.Index(doc, "## Why the check must be atomic")
	if from < 0 || to < from {
		t.Fatal("fencing.md lost its sections")
	}
	prose := strings.Join(strings.Fields(doc[from:to]), " ")
	claims := regexp.MustCompile("`(-[^`]+)`(?:: (SAFE)| loses ([AB])'s write)").FindAllStringSubmatch(prose, -1)
	if len(claims) < 3 {
		t.Fatalf("the TTL section gives %d commands with a verdict, want the shorter TTL's and the longer TTL's two", len(claims))
	}
	for _, c := range claims {
		_, out, _ := runCmd(t, strings.Fields(c[1])...)
		if !strings.Contains(out, "Fencing ON:\n  • SAFE") {
			t.Errorf("fencesim %s: fencing on is not safe:\n%s", c[1], out)
		}
		lost := regexp.MustCompile(`write ([AB])1 \(token \d+, accepted at [\d.]+s\) is LOST`).FindStringSubmatch(out)
		switch {
		case c[2] == "SAFE" && !strings.Contains(out, "Fencing OFF:\n  • SAFE"):
			t.Errorf("fencing.md says fencesim %s is SAFE; fencing off is not:\n%s", c[1], out)
		case c[3] != "" && (lost == nil || lost[1] != c[3]):
			t.Errorf("fencing.md says fencesim %s loses %s's write; fencesim loses %q:\n%s", c[1], c[3], lost, out)
		}
	}
}

// TestREADMESaysWhichError: the README, whose program checks
// fence.ErrFencedOut while its package table also lists fence.ErrStale,
// says which one a caller gets when (a student could not tell).
func TestREADMESaysWhichError(t *testing.T) {
	readme := strings.Join(strings.Fields(readDoc(t, "README.md")), " ")
	if want := "Test for `fence.ErrFencedOut`: it matches a refused write and one cut off by a lost lease"; !strings.Contains(readme, want) {
		t.Errorf("README.md does not say which error a caller gets when (no %q)", want)
	}
}
