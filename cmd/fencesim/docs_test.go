package main

import (
	"os"
	"strings"
	"testing"
)

// TestDocsShowRealOutput keeps docs/fencing.md honest: the terminal output
// it pastes must be what the command prints today.
func TestDocsShowRealOutput(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fencing.md")
	if err != nil {
		t.Skipf("docs not found: %v", err)
	}
	for _, args := range [][]string{
		nil,
		{"crash"},
		{"heartbeat", "-fencing", "off"},
		{"heartbeat", "-heartbeat", "0", "-fencing", "off"},
		{"pause-heartbeat"},
		{"drift"},
		{"explore", "-runs", "100000", "-seed", "7"},
	} {
		if (testing.Short() || raceEnabled) && len(args) > 0 && args[0] == "explore" {
			continue
		}
		code, out, errs := runCmd(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		// Scenario output starts with the story; the doc pastes from the title on.
		if i := strings.Index(out, "fencesim "); i > 0 && (len(args) == 0 || args[0] != "explore") {
			out = out[i:]
		}
		if !strings.Contains(string(doc), strings.TrimRight(out, "\n")) {
			t.Errorf("docs/fencing.md does not show the current output of fencesim %s", strings.Join(args, " "))
		}
	}
}
