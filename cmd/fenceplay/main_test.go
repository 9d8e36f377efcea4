package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestServeRefusesBadFlags(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-dir", empty, "-build", empty}, "do not go together"},
		{[]string{"-dir", empty}, "has no fencesim.wasm"},
		{[]string{"now"}, "takes no arguments"},
	} {
		code, _, errs := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestServeBusyPort: a port in use fails at once, with a hint.
func TestServeBusyPort(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fencesim.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, out, errs := runCmd(t, "-dir", dir, "-addr", ln.Addr().String())
	if code != exitFailed || out != "" || !strings.Contains(errs, "address already in use") || !strings.Contains(errs, "-addr 127.0.0.1:0") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and a hint", code, out, errs)
	}
}

// TestServeServesTheFolder serves a folder and stops when the context ends.
func TestServeServesTheFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>playground</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, dir) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "<p>playground</p>" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET / = %q, Cache-Control %q", body, resp.Header.Get("Cache-Control"))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after the context ended", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after the context ended")
	}
}
