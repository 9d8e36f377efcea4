package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// restoreScript is the etcd recovery docs/operations.md gives ("Writes
// refused as stale"): the shell block that runs etcdutl snapshot restore.
func restoreScript(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "etcdutl snapshot restore") {
			return m[1]
		}
	}
	t.Fatal("docs/operations.md has no sh block running etcdutl snapshot restore")
	return ""
}

// findEtcdutl returns the etcdutl that make tools builds: at
// FENCEKIT_ETCDUTL, else in PATH, else in $GOPATH/bin.
func findEtcdutl() (string, error) {
	if p := os.Getenv("FENCEKIT_ETCDUTL"); p != "" {
		_, err := os.Stat(p)
		return p, err
	}
	if p, err := exec.LookPath("etcdutl"); err == nil {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.SplitList(strings.TrimSpace(string(out)))[0], "bin", "etcdutl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("etcdutl is not installed (not in PATH nor %s): run make tools or set FENCEKIT_ETCDUTL", p)
	}
	return p, nil
}

// TestRestoreRecovery runs the etcd recovery of docs/operations.md in the
// interleaving it must cover: G1 writes; a snapshot is taken; other leases
// are granted; G2 is granted a larger token but pauses before writing; the
// member's data is lost and the snapshot restored as the runbook says; G3
// is granted the name and writes; G2's late write must be refused.
func TestRestoreRecovery(t *testing.T) {
	etcdutl, err := findEtcdutl()
	if err != nil {
		if testenv.Required() {
			t.Fatal(err)
		}
		t.Skip(err.Error() + " (skipping; set FENCEKIT_REQUIRE_SERVERS=1 to fail instead)")
	}
	script := restoreScript(t)
	cluster := testenv.StartEtcdCluster(t, 1)
	m := cluster.Members[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := &lease.Options{Logger: slog.New(slog.DiscardHandler)}
	cli, _ := countingClient(t, cluster.Endpoints)
	c, err := New(cli, quiet)
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(c *lease.Client, name string) *lease.Lease {
		t.Helper()
		l, err := c.Acquire(ctx, name, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const name = "orders"
	store := fencetest.NewStore()
	g1 := acquire(c, name)
	if err := store.Put(name, g1.Token(), []byte("g1")); err != nil {
		t.Fatal(err)
	}
	g1.Release(ctx)

	dir := t.TempDir()
	snap, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "snapshot.db"))
	if err == nil {
		_, err = io.Copy(f, snap)
		err = errors.Join(err, f.Close(), snap.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // other leases at work
		acquire(c, "other").Release(ctx)
	}
	g2 := acquire(c, name) // paused before its write

	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(m.Dir, "m0.etcd")
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	flags := strings.Join([]string{"--name m0 --data-dir", data, "--initial-cluster m0=" + m.PeerURL,
		"--initial-cluster-token", filepath.Base(m.Dir), "--initial-advertise-peer-urls", m.PeerURL}, " ")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(script, "--data-dir ...", flags))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(etcdutl)+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the runbook's restore: %v\n%s", err, out)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}

	g3 := acquire(c, name)
	t.Logf("G1 %v, G2 %v, G3 %v", g1.Token(), g2.Token(), g3.Token())
	if err := store.Put(name, g3.Token(), []byte("g3")); err != nil {
		t.Fatalf("G3's write (token %v; G2 holds %v): %v", g3.Token(), g2.Token(), err)
	}
	if err := store.Put(name, g2.Token(), []byte("g2")); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("G2's late write (token %v) after G3's (token %v): %v, want refused as stale", g2.Token(), g3.Token(), err)
	}
	if now := fence.Token(time.Now().UnixMicro()); g3.Token() > now {
		t.Errorf("G3's token %v is ahead of the clock (%v µs)", g3.Token(), now)
	}
}
