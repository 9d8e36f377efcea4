package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/sim"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestDefault is `make demo`: no arguments, no servers, Kleppmann's
// scenario side by side.
func TestDefault(t *testing.T) {
	code, out, errs := runCmd(t)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"kleppmann", "fencing OFF", "fencing ON", "write A1/33 ok", "write A1/33 REJECTED",
		"TOKENS WENT BACKWARDS", "B1 (token 34, accepted at 12.7s) is LOST", "REJECTED as stale", `Final value of "file": "A1"`, `Final value of "file": "B1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, again, _ := runCmd(t)
	if again != out {
		t.Fatal("two runs printed different output")
	}
}

func TestScenariosAndFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"-pause", "5s"}, []string{`"A1 B1"`, "SAFE"}, []string{"LOST", "REJECTED"}},
		{[]string{"kleppmann", "-work", "8s"}, []string{"A1 (token 33, accepted at 17.5s) is LOST", `"B1"`}, []string{"TOKENS WENT BACKWARDS"}},
		{[]string{"-work", "2s", "kleppmann", "-fencing", "on"}, []string{"fencing ON", "REJECTED"}, []string{"fencing OFF"}},
		{[]string{"crash"}, []string{"Forced downtime", "CRASHED"}, nil},
		{[]string{"crash", "-ttl", "10s", "-heartbeat", "3s"}, []string{"until it expired at 10.1s"}, nil},
		{[]string{"heartbeat"}, []string{`"A1 A2 A3 B1"`}, []string{"LOST"}},
		{[]string{"pause-heartbeat"}, []string{"heartbeat: LOST", "REJECTED"}, nil},
		{[]string{"drift", "-fencing", "off"}, []string{"TOKENS WENT BACKWARDS"}, nil},
		{[]string{"drift", "-drift", "0", "-fencing", "off"}, []string{"SAFE"}, []string{"TOKENS WENT BACKWARDS"}},
		{[]string{"list"}, []string{"kleppmann", "pause-heartbeat", "drift -0.5"}, nil},
	} {
		code, out, errs := runCmd(t, tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, errs)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("%v: output has %q:\n%s", tc.args, w, out)
			}
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-pause", "45"}, "has no unit"},
		{[]string{"-pause", "-5s"}, "negative"},
		{[]string{"-ttl", "0"}, "ttl must be positive"},
		{[]string{"-ttl", "ten"}, "not a duration"},
		{[]string{"nosuch"}, `unknown scenario "nosuch"`},
		{[]string{"kleppmann", "crash"}, "unexpected argument"},
		{[]string{"-fencing", "maybe"}, `"maybe" is not a storage mode: use off, writes, claim (or on), check-then-write, or both`},
		{[]string{"-fencing", "claim,on"}, "storage claim listed twice"},
		{[]string{"drift", "-drift", "-2"}, "drift -2 outside"},
		{[]string{"crash", "-pause", "20s"}, "scenario crash has no -pause (-pause applies to kleppmann, check-then-write, pause-heartbeat)"},
		{[]string{"-drift", "0.3"}, "scenario kleppmann has no -drift"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
		{[]string{"explore", "-runs", "-1"}, "runs -1 is negative"},
		{[]string{"explore", "-pause-prob", "2"}, "not a probability"},
		{[]string{"explore", "-delay", "200"}, "has no unit"},
		{[]string{"explore", "-clients", "0"}, "clients 0"},
		{[]string{"explore", "extra"}, "no arguments"},
		{[]string{"replay"}, "needs -seed"},
		{[]string{"list", "x"}, "no arguments"},
	} {
		code, out, errs := runCmd(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, errs, tc.want)
		}
		if out != "" {
			t.Errorf("%v: printed results despite the bad flag: %q", tc.args, out)
		}
	}
	// Help states each default once, and never a zero default that the
	// scenario replaces.
	twice := regexp.MustCompile(`default[^)]*\) \(default`)
	for _, sub := range []string{"", "explore", "replay", "real"} {
		args := []string{"-h"}
		if sub != "" {
			args = []string{sub, "-h"}
		}
		code, _, help := runCmd(t, args...)
		if code != 0 || !strings.Contains(help, "usage: fencesim") || twice.MatchString(help) || strings.Contains(help, "(default 0s)") {
			t.Errorf("%v: exit %d, help:\n%s", args, code, help)
		}
	}
}

func TestExplore(t *testing.T) {
	code, out, errs := runCmd(t, "explore", "-runs", "3000", "-seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"3000 random schedules from seed 7", "runs where tokens went backwards",
		"seeds where tokens went backwards, storage off:", "replay one with: go run ./cmd/fencesim replay -seed", "OK: with fencing on (claim), no violation"} {
		if !strings.Contains(out, want) {
			t.Errorf("explore output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Error("progress bar drawn although stdout is not a terminal")
	}
	// The first listed seed replays to an UNSAFE timeline without fencing,
	// with the command as printed (the lesson's go run, not an installed
	// fencesim a reader does not have).
	line := out[strings.Index(out, "replay one with: ")+len("replay one with: "):]
	line = line[:strings.Index(line, "\n")]
	cmd, ok := strings.CutPrefix(line, "go run ./cmd/fencesim ")
	if !ok {
		t.Fatalf("the replay hint is not runnable from the repository as printed: %q", line)
	}
	args := strings.Fields(cmd)
	code, rout, errs := runCmd(t, args...)
	if code != 0 || !strings.Contains(rout, "TOKENS WENT BACKWARDS") || !strings.Contains(rout, "fencing ON") {
		t.Fatalf("%v: exit %d %s\n%s", args, code, errs, rout)
	}
}

// TestExploreNoFaults: with no pauses, drift or delay, even fencing off is clean.
func TestExploreNoFaults(t *testing.T) {
	code, out, errs := runCmd(t, "explore", "-runs", "500", "-pause-prob", "0", "-drift", "0", "-delay", "0s")
	if code != 0 || strings.Contains(out, "seeds where tokens went backwards") {
		t.Fatalf("exit %d %s\n%s", code, errs, out)
	}
}

func TestJSONOutput(t *testing.T) {
	code, out, errs := runCmd(t, "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	runs := map[float64]bool{}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		runs[m["run"].(float64)] = true
	}
	if len(runs) != 2 {
		t.Fatalf("JSON covers runs %v, want 0 and 1", runs)
	}
}

func TestHTMLFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.html")
	code, out, errs := runCmd(t, "-html", path, "kleppmann")
	if code != 0 || !strings.Contains(errs, "wrote "+path) || !strings.Contains(out, "fencing ON") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	svgs := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("HTML does not parse: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "svg" {
			svgs++
		}
	}
	if svgs != 2 {
		t.Fatalf("%d <svg> for 2 runs", svgs)
	}
	code, _, errs = runCmd(t, "-html", filepath.Join(t.TempDir(), "no", "such", "dir.html"))
	if code != 1 || !strings.Contains(errs, "html:") {
		t.Fatalf("unwritable -html: exit %d %q", code, errs)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"45s": 45 * time.Second, "1m30s": 90 * time.Second, "250ms": 250 * time.Millisecond, "0": 0, " 2s ": 2 * time.Second} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"45": "no unit", "-5s": "negative", "": "empty", "5 s": "not a duration", "1.5": "no unit", "s": "not a duration"} {
		if _, err := parseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseDuration(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// FuzzParseDuration: never panics; what it accepts is non-negative and
// survives a round trip through time.Duration.String.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"45s", "45", "-5s", "0", "1h2m3.5s", "", "1e3", "NaN", "9999999999h", ".5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err != nil {
			if d != 0 {
				t.Fatalf("parseDuration(%q) returned %v with error %v", s, d, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("parseDuration(%q) = %v, negative", s, d)
		}
		back, err := parseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, d, d.String(), back, err)
		}
	})
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	drawProgress(&b, 500, 1000, "schedules")
	if got := b.String(); got != "\r["+strings.Repeat("#", 20)+strings.Repeat(".", 20)+"] 500/1000 schedules" {
		t.Fatalf("progress bar %q", got)
	}
	if isTerminal(&b) {
		t.Fatal("a buffer is not a terminal")
	}
}

// TestHelpListsSubcommands: `fencesim -h` (and `fencesim help`) name every
// subcommand, not only the scenario flags.
func TestHelpListsSubcommands(t *testing.T) {
	_, _, help := runCmd(t, "-h")
	_, list, _ := runCmd(t, "help")
	for _, out := range []string{help, list} {
		for _, sc := range subcommands {
			if !strings.Contains(out, sc.usage) {
				t.Errorf("help lacks %q:\n%s", sc.usage, out)
			}
		}
		for _, want := range []string{"fencesim help", "check-then-write", "fencesim [SCENARIO] [flags]"} {
			if !strings.Contains(out, want) {
				t.Errorf("help lacks %q:\n%s", want, out)
			}
		}
	}
	if !strings.Contains(help, "-pause-at") {
		t.Errorf("-h lacks the scenario flags:\n%s", help)
	}
}

// TestStorageFlag: -fencing picks the storage modes shown side by side.
func TestStorageFlag(t *testing.T) {
	code, out, errs := runCmd(t, "-work", "8s", "-fencing", "writes,claim")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	i := strings.Index(out, "\nWrite check only:\n")
	j := strings.Index(out, "\nFencing ON:\n")
	if i < 0 || j < i || !strings.Contains(out[i:j], "A WRITE WAS LOST") || !strings.Contains(out[j:], "SAFE") ||
		!strings.Contains(out, "WRITE CHECK only") || strings.Contains(out, "fencing OFF") {
		t.Fatalf("output:\n%s", out)
	}
	code, out, errs = runCmd(t, "check-then-write")
	if code != 0 || !strings.Contains(out, "CHECK-THEN-WRITE") || !strings.Contains(out, "check A1/33 ok") ||
		!strings.Contains(out, "TOKENS WENT BACKWARDS") {
		t.Fatalf("check-then-write: exit %d %s\n%s", code, errs, out)
	}
}

// TestIntroFollowsFlags: the story printed before the timeline is built
// from the flags.
func TestIntroFollowsFlags(t *testing.T) {
	_, out, _ := runCmd(t, "-pause", "9.5s")
	story := out[:strings.Index(out, "\nfencesim kleppmann")]
	if !strings.Contains(wrapJoin(story), "for 9.5s, shorter than the 10s TTL") || strings.Contains(story, "longer than") {
		t.Fatalf("story:\n%s", story)
	}
}

// wrapJoin undoes wrap's line breaks.
func wrapJoin(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// TestExploreWarnsAndCountsDowntime: explore warns when its pauses cannot
// outlast a lease, and reports the downtime a crashed holder's lease costs.
func TestExploreWarnsAndCountsDowntime(t *testing.T) {
	code, out, errs := runCmd(t, "explore", "-runs", "200", "-ttl", "60s")
	if code != 0 || !strings.Contains(out, "WARNING: no pause can outlast a lease") ||
		!strings.Contains(out, "But see the WARNING above") {
		t.Fatalf("exit %d %s\n%s", code, errs, out)
	}
	if !regexp.MustCompile(`mean downtime in those runs +\d[\d.]*s +\d[\d.]*s`).MatchString(out) {
		t.Fatalf("no downtime row:\n%s", out)
	}
	_, out, _ = runCmd(t, "explore", "-runs", "200")
	if strings.Contains(out, "WARNING") {
		t.Fatalf("defaults warn:\n%s", out)
	}
}

// FuzzFencingFlag: -fencing either refuses its value with an error naming
// it, or yields known storage modes, each once.
func FuzzFencingFlag(f *testing.F) {
	for _, s := range []string{"both", "on", "off,claim", "writes,claim,check-then-write", "claim,claim", "", ",", "maybe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m fencingMode
		if err := m.Set(s); err != nil {
			if !strings.Contains(err.Error(), "storage") && !strings.Contains(err.Error(), "listed twice") {
				t.Fatalf("Set(%q): error %q names no storage", s, err)
			}
			return
		}
		got, err := m.storages([]sim.Storage{sim.StorageOff})
		if err != nil || len(got) == 0 {
			t.Fatalf("Set(%q) accepted, storages %v, %v", s, got, err)
		}
		seen := map[sim.Storage]bool{}
		for _, st := range got {
			if seen[st] || st.String() == "" || strings.HasPrefix(st.String(), "storage(") {
				t.Fatalf("Set(%q): storages %v", s, got)
			}
			seen[st] = true
		}
	})
}
