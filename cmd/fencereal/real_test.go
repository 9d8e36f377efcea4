package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// TestMain lets the test binary act as the holder child (it re-executes
// itself, as the fencereal binary does) and gives testenv its
// hook for harness-started servers.
func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(holderMain())
	}
	testenv.Main(m)
}

// TestRealKleppmann runs fencereal against the test servers: the
// holder child is SIGSTOPped past its Redis lease's TTL, and each store
// (PostgreSQL guard row, PostgreSQL lock_version row, S3 object) must
// reject its late write and keep B's data.
func TestRealKleppmann(t *testing.T) {
	rdb := testenv.Redis(t)
	pg := testenv.Postgres(t)
	s3env := testenv.S3(t)
	name := rdb.Name("real")
	args := []string{"-json",
		"-redis", rdb.Addr, "-postgres", pg.URL,
		"-s3-endpoint", s3env.Endpoint, "-s3-access", s3env.AccessKey, "-s3-secret", s3env.SecretKey,
		"-s3-bucket", s3env.Bucket, "-name", name, "-ttl", "500ms", "-pause", "1500ms"}
	code, out, errs := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("fencereal: exit %d\nstderr: %s\nstdout: %s", code, errs, out)
	}
	var rejected, acceptedB []map[string]any
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("JSON line %q: %v", line, err)
		}
		switch {
		case m["kind"] == "write-rejected" && m["client"] == "A":
			rejected = append(rejected, m)
		case m["kind"] == "write-accepted" && m["client"] == "A":
			t.Fatalf("a store accepted A's stale write: %v", m)
		case m["kind"] == "write-accepted" && m["client"] == "B":
			acceptedB = append(acceptedB, m)
		case m["kind"] == "summary":
			summary = m
		}
	}
	if len(rejected) != 3 || len(acceptedB) != 3 {
		t.Fatalf("A's rejected writes %v, B's accepted %v: want 3 each (pg guard, pg row, s3)", rejected, acceptedB)
	}
	for _, m := range rejected {
		if m["other"] == nil || m["other"].(float64) <= m["token"].(float64) {
			t.Fatalf("rejection %v does not name a newer token", m)
		}
	}
	if summary == nil || summary["violation"] != nil || len(summary["final"].([]any)) != 3 {
		t.Fatalf("summary %v", summary)
	}

	// Check the stores directly, not only what fencereal reported.
	ctx := context.Background()
	bTok := acceptedB[0]["token"].(float64)
	var cur int64
	if err := pg.Pool.QueryRow(ctx, `SELECT token FROM fencekit_tokens WHERE resource = $1`, name).Scan(&cur); err != nil || float64(cur) != bTok {
		t.Fatalf("guard row token %d, %v; want B's %v", cur, err, bTok)
	}
	var value string
	var version int64
	if err := pg.Pool.QueryRow(ctx, `SELECT value, lock_version FROM `+demoRowTable+` WHERE key = $1`, name).Scan(&value, &version); err != nil ||
		value != "B's data" || float64(version) != bTok {
		t.Fatalf("lock_version row = %q v%d, %v", value, version, err)
	}
	store, err := blobfence.New(s3env.Client, s3env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, tok, err := store.Get(ctx, name)
	if err != nil || string(body) != "B's data" || float64(tok) != bTok {
		t.Fatalf("S3 object = %q token %d, %v", body, tok, err)
	}
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runReal(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRealBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ttl", "2s", "-pause", "1s", "-s3-endpoint", "http://x"}, "must exceed"},
		{[]string{"-ttl", "1ms", "-s3-endpoint", "http://x"}, "below the lease minimum"},
		{[]string{"-pause", "5"}, "not a duration with a unit"},
		{[]string{"-s3-endpoint", "http://x", "-fencing", "off"}, "flag provided but not defined: -fencing"},
		{[]string{"-s3-endpoint", "http://x", "-name", "a b"}, "-name"},
		{[]string{"extra"}, "no arguments"},
	} {
		code, out, errs := runCmd(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d stderr %q stdout %q; want 2 and %q", tc.args, code, errs, out, tc.want)
		}
	}
	t.Setenv("FENCEKIT_S3_ENDPOINT", "")
	if code, _, errs := runCmd(t); code != 2 || !strings.Contains(errs, "S3 server") {
		t.Errorf("real without S3: exit %d %q", code, errs)
	}
}

// TestRealWithoutS3SaysHowToStartOne: run as the lesson shows it, with no
// S3 server set, fencereal says how to start a local one (versitygw, at
// the version make tools installs) and how to run it against that one:
// the endpoint and keys it sets are the port and keys the server is
// started with. A student ran "go run ./cmd/fencereal" from the lesson's
// table and met only "set -s3-endpoint and its keys".
func TestRealWithoutS3SaysHowToStartOne(t *testing.T) {
	t.Setenv("FENCEKIT_S3_ENDPOINT", "")
	_, _, errs := runCmd(t)
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`(?m)^VERSITYGW_VERSION := (\S+)$`).FindSubmatch(mk)
	if pin == nil || !strings.Contains(errs, "go install github.com/versity/versitygw/cmd/versitygw@"+string(pin[1])+"\n") {
		t.Errorf("the message does not say how to install versitygw %s:\n%s", pin[1], errs)
	}
	server := regexp.MustCompile(`ROOT_ACCESS_KEY=(\S+) ROOT_SECRET_KEY=(\S+) versitygw --port (127\.0\.0\.1:\d+) posix (\S+)`).FindStringSubmatch(errs)
	if server == nil || !strings.Contains(errs, "mkdir -p "+server[4]) {
		t.Fatalf("the message does not say how to start versitygw on a loopback port, in a folder it creates:\n%s", errs)
	}
	run := "FENCEKIT_S3_ENDPOINT=http://" + server[3] + " FENCEKIT_S3_ACCESS_KEY=" + server[1] + " FENCEKIT_S3_SECRET_KEY=" + server[2] + " go run ./cmd/fencereal\n"
	if !strings.Contains(errs, run) {
		t.Errorf("the message does not run fencereal against the server it starts (%q):\n%s", run, errs)
	}
}
