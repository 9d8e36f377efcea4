package readme

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoIgnoredFileTracked: nothing .gitignore names as a build output, log
// or pid file is committed (a 22.6 MB binary and a trial's pid files were).
func TestNoIgnoredFileTracked(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "--cached", "--ignored", "--exclude-standard").CombinedOutput()
	if err != nil {
		t.Skipf("not a git checkout (%v): %s", err, out)
	}
	if files := strings.Fields(string(out)); len(files) > 0 {
		t.Errorf("committed files that .gitignore ignores (git rm them): %s", strings.Join(files, " "))
	}
}
