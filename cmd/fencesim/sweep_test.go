package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSweepWritesCSVAndJSON(t *testing.T) {
	code, out, errs := runCmd(t, "sweep", "-runs", "40", "-pause", "0,1.5", "-heartbeat", "1/3", "-fencing", "off,on")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "pause_ttl,heartbeat_ttl,drift,storage,runs,safe,") {
		t.Fatalf("want a header and 4 rows, got:\n%s", out)
	}
	if !strings.HasPrefix(lines[1], "0,0.333") || !strings.Contains(lines[4], ",claim,40,40,") {
		t.Errorf("rows do not match the grid (pause 0 first; fencing on at 1.5 all safe):\n%s", out)
	}
	code, out, _ = runCmd(t, "sweep", "-runs", "10", "-pause", "1", "-format", "json")
	if code != 0 || !strings.HasPrefix(out, "[") || !strings.Contains(out, `"lost_update"`) {
		t.Fatalf("json: exit %d:\n%s", code, out)
	}
}

func TestSweepRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-format", "xml"}, `-format "xml"`},
		{[]string{"-fencing", "maybe"}, `"maybe" is not a storage mode`},
		{[]string{"-pause", "2:1:0.1"}, "LO <= HI"},
		{[]string{"-pause", "0:2"}, "LO:HI:STEP"},
		{[]string{"-heartbeat", "1/0"}, "not a fraction"},
		{[]string{"-drift", "0.95"}, "drift 0.95"},
		{[]string{"-runs", "-1"}, "runs -1"},
		{[]string{"extra"}, "takes no arguments"},
	} {
		code, out, errs := runCmd(t, append([]string{"sweep"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("sweep %v: exit %d, stdout %q, stderr %q; want 2 and an error naming %q", tc.args, code, out, errs, tc.want)
		}
	}
}

func TestSweepWritesTheSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map.svg")
	code, _, errs := runCmd(t, "sweep", "-runs", "10", "-pause", "0:2:0.5", "-svg", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	svg, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) || !strings.Contains(errs, "wrote "+path) {
		t.Fatalf("svg %q..., err %v, stderr %q", svg[:min(len(svg), 40)], err, errs)
	}
}

// TestViolationMapIsCurrent keeps docs/img/violation-map.svg, and the
// playground's copy of it, what `make violation-map` draws today. Under the
// race detector the sweep runs in a child (go run), 30 times faster.
func TestViolationMapIsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map.svg")
	if raceEnabled {
		cmd := exec.Command("go", "run", ".", "sweep", "-svg", path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go run . sweep: %v\n%s", err, out)
		}
	} else if code, _, errs := runCmd(t, "sweep", "-svg", path); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"../../docs/img/violation-map.svg", "../../internal/playground/static/violation-map.svg"} {
		old, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (make violation-map draws it)", err)
		}
		if !bytes.Equal(old, now) {
			t.Errorf("%s is out of date: run make violation-map", strings.TrimPrefix(file, "../../"))
		}
	}
}

// TestProgressOnlyOnATerminal: with stderr a file or a pipe, a long sweep
// and a long explore print no progress bar, nothing at all.
func TestProgressOnlyOnATerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, stderr := range []*os.File{file, w} {
		var out bytes.Buffer
		if code := run([]string{"sweep", "-runs", "20", "-pause", "0:1:0.25"}, &out, stderr); code != 0 {
			t.Fatalf("sweep: exit %d", code)
		}
		// 10,000 runs: explore's threshold for a progress bar; small ones.
		if code := run([]string{"explore", "-runs", "10000", "-clients", "1", "-jobs", "1", "-writes", "1", "-fencing", "off"}, &out, stderr); code != 0 {
			t.Fatalf("explore: exit %d", code)
		}
	}
	w.Close()
	piped, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	filed, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(piped) != 0 || len(filed) != 0 {
		t.Fatalf("not a terminal, yet stderr got %q (pipe) and %q (file)", piped, filed)
	}
	if newProgress(w, 10, "points") != nil {
		t.Fatal("a pipe is not a terminal")
	}
}

// TestProgressOnATerminal: a pseudo-terminal gets a progress bar.
func TestProgressOnATerminal(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer pty.Close()
	if newProgress(pty, 10, "points") == nil {
		t.Fatal("a pseudo-terminal got no progress bar")
	}
}

func TestParseAxis(t *testing.T) {
	for in, want := range map[string][]float64{
		"0:1:0.25":  {0, 0.25, 0.5, 0.75, 1},
		"0:0.3:0.1": {0, 0.1, 0.2, 0.3},
		"1/3, 0.5":  {1.0 / 3, 0.5},
		"2":         {2},
	} {
		got, err := parseAxis(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("parseAxis(%q) = %v, %v; want %v", in, got, err, want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("parseAxis(%q) = %v, want %v", in, got, want)
			}
		}
	}
	for _, bad := range []string{"", "a", "1,,2", "0:1:0", "0:1:-1", "NaN", "1/x", "0:1e9:1", "inf"} {
		if _, err := parseAxis(bad); err == nil {
			t.Errorf("parseAxis(%q): want an error", bad)
		}
	}
}

func FuzzParseAxis(f *testing.F) {
	for _, s := range []string{"0:2:0.1", "1/3,0.5", "1", "0:1:1e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := parseAxis(s)
		if err != nil {
			return
		}
		if len(vals) == 0 || len(vals) > 1002 {
			t.Fatalf("parseAxis(%q) gave %d values", s, len(vals))
		}
		for _, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("parseAxis(%q) gave %v", s, v)
			}
		}
	})
}

// TestExploreJSON: explore -json reports one point as a JSON object with
// the same counts as the text report.
func TestExploreJSON(t *testing.T) {
	args := []string{"explore", "-runs", "500", "-pause-prob", "1", "-pause-max", "20s", "-fencing", "off,claim"}
	code, out, errs := runCmd(t, append(args, "-json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Runs != 500 || rep.PauseMax != "20s" || len(rep.Tallies) != 2 || rep.Tallies[0].Storage != "off" || !rep.FencingSafe {
		t.Fatalf("report %+v", rep)
	}
	off := rep.Tallies[0]
	if off.TokensBackwards == 0 || len(off.ViolatingSeeds) == 0 || off.LostRuns == 0 {
		t.Fatalf("fencing off with long pauses: %+v, want violations", off)
	}
	// The text report's row of backward tokens has the same two counts.
	_, text, _ := runCmd(t, args...)
	m := regexp.MustCompile(`(?m)^\s*runs where tokens went backwards.*?(\d+)\s+(\d+)$`).FindStringSubmatch(text)
	if m == nil || m[1] != fmt.Sprint(off.TokensBackwards) || m[2] != fmt.Sprint(rep.Tallies[1].TokensBackwards) {
		t.Errorf("the text report's backward tokens %q disagree with the JSON %d, %d:\n%s", m, off.TokensBackwards, rep.Tallies[1].TokensBackwards, text)
	}
}
