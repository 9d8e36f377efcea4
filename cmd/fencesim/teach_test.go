package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestLessonRuleSaysSeen: README.md and docs/fencing.md state the same
// rule: a write is refused when its token is older than one the storage
// has seen (by a read's claim or a write), not only one it accepted.
func TestLessonRuleSaysSeen(t *testing.T) {
	readme := strings.Join(strings.Fields(readDoc(t, "README.md")), " ")
	if !strings.Contains(readme, "older than one it has already seen") {
		t.Errorf("README.md's rule does not say \"older than one it has already seen\"")
	}
	if strings.Contains(readme, "older than one it has already accepted") {
		t.Errorf("README.md states the write-check-only rule (\"already accepted\")")
	}
}

// TestFencingListSaysSideBySide: where the lesson and the demo's tip show
// a comma-separated -fencing, they say that each mode is its own storage,
// run side by side, not the modes combined.
func TestFencingListSaysSideBySide(t *testing.T) {
	for doc, want := range map[string]string{"docs/fencing.md": "two storages side by side", "docs/simulator.md": "runs those storages side by side"} {
		if !strings.Contains(strings.Join(strings.Fields(readDoc(t, doc)), " "), want) {
			t.Errorf("%s does not say %q", doc, want)
		}
	}
	_, out, _ := runCmd(t)
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "-fencing writes,claim (two storages side by side") {
		t.Errorf("the demo's tip shows -fencing writes,claim without saying it runs two storages side by side:\n%s", out)
	}
}

// TestLaneSeparators: a row's lease cell and its client lanes are
// separated, so that "B:34" in the lease column does not read as B doing
// what A's lane says.
func TestLaneSeparators(t *testing.T) {
	_, out, _ := runCmd(t)
	if !regexp.MustCompile(`(?m)^ +17\.4s │ -  +┆ resumed`).MatchString(out) {
		t.Errorf("no separator between the lease column and A's lane:\n%s", out)
	}
	if regexp.MustCompile(`(?m)B:34 +resumed|B:34 +write A1`).MatchString(out) {
		t.Errorf("a row reads as B resuming or writing A1:\n%s", out)
	}
}

// TestCheckThenWriteRows: every row of the check-then-write timeline has
// its time, A's check is shown before its pause (it was sent before), and
// the atomic storage shows no separate check: its write is the check.
func TestCheckThenWriteRows(t *testing.T) {
	_, out, _ := runCmd(t, "check-then-write")
	start := strings.Index(out, "─┼")
	body := out[start+strings.Index(out[start:], "\n")+1 : strings.LastIndex(out, "\nCheck-then-write:")]
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !regexp.MustCompile(`^ +\d+(\.\d+)?s │`).MatchString(line) {
			t.Errorf("a row without its time: %q", line)
		}
	}
	check, pause := strings.Index(body, "check A1/33 ok"), strings.Index(body, "PAUSED")
	if check < 0 || pause < 0 || check > pause {
		t.Errorf("A's check is not shown before its pause:\n%s", body)
	}
	for _, line := range strings.Split(body, "\n") {
		if cols := strings.Split(line, "│"); len(cols) == 3 && strings.Contains(cols[2], "check ") {
			t.Errorf("the atomic storage's column shows a separate check: %q", line)
		}
	}
}

// TestTitleFollowsPauseAt: the kleppmann header does not say A is paused
// just before its write when -pause-at puts the pause mid-work.
func TestTitleFollowsPauseAt(t *testing.T) {
	_, out, _ := runCmd(t, "-pause-at", "1s")
	if title := out[strings.Index(out, "\nfencesim "):]; strings.Contains(strings.SplitN(title[1:], "\n", 2)[0], "just before its write") {
		t.Errorf("-pause-at 1s: the header says the pause is just before the write:\n%s", out)
	}
}

// TestCheckThenWriteStoryMatchesItsTable: check-then-write's story tells
// the moments its table prints: A's check row and its pause share one
// time, so the story says the storage answers as A is paused (not "before
// the answer came back", which reads against the row's "ok"), and it
// places the pause no further into the work than the work lasts.
func TestCheckThenWriteStoryMatchesItsTable(t *testing.T) {
	_, out, _ := runCmd(t, "check-then-write")
	check := regexp.MustCompile(`(?m)^ *([\d.]+s) │ A:33 +┆ check A1/33 ok`).FindStringSubmatch(out)
	pause := regexp.MustCompile(`(?m)^ *([\d.]+s) │ A:33 +┆ PAUSED 15s`).FindStringSubmatch(out)
	if check == nil || pause == nil || check[1] != pause[1] {
		t.Fatalf("the table no longer prints A's check and pause at one time (check %v, pause %v):\n%s", check, pause, out)
	}
	story := strings.Join(strings.Fields(out[:strings.Index(out, "\nfencesim ")]), " ")
	if !strings.Contains(story, "as the storage answers it (33 is current: ok), A is paused") {
		t.Errorf("the story does not say A is paused as the storage answers its check (both at %s):\n%s", check[1], story)
	}
	if strings.Contains(story, "2.1s into the work") || strings.Contains(story, "before the answer came back") {
		t.Errorf("the story contradicts its table:\n%s", story)
	}
}

// TestLessonClaimCreditsWhatTheDemoPrints: the lesson's "Why the claim"
// says what refused A in the demo as the demo's output does (the storage
// had seen token 34, claimed by B's read), not the write check alone.
func TestLessonClaimCreditsWhatTheDemoPrints(t *testing.T) {
	doc := strings.Join(strings.Fields(readDoc(t, "docs/fencing.md")), " ")
	_, out, _ := runCmd(t)
	if !strings.Contains(out, "claimed by B's read") {
		t.Fatalf("the demo no longer credits B's read claim:\n%s", out)
	}
	if !strings.Contains(doc, "In the demo the claim refused A") {
		t.Errorf("docs/fencing.md does not say the claim refused A in the demo, as its output does (%q)", "claimed by B's read")
	}
}

// TestREADMEDefinesGuardRow: the README's first "guard row" says what
// one is (a row per resource keeping its largest token); a student met
// the term there before any page defined it.
func TestREADMEDefinesGuardRow(t *testing.T) {
	readme := strings.Join(strings.Fields(readDoc(t, "README.md")), " ")
	i := strings.Index(readme, "guard row")
	if i < 0 {
		t.Fatal(`README.md no longer says "guard row"`)
	}
	if first := readme[max(0, i-40):min(len(readme), i+60)]; !strings.Contains(first, "guard row per resource keeping its largest token") {
		t.Errorf("README.md's first \"guard row\" does not say what one is: %q", first)
	}
}
