package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PostgresServer is a private PostgreSQL server for fault tests (restarts,
// crashes), never the shared one on 5432. Its data directory survives
// [Server.Restart], [Server.Kill] and [Server.Start]; Stop is PostgreSQL's
// fast shutdown (SIGINT), Kill a crash that the next start recovers from
// the WAL.
type PostgresServer struct {
	*Server
	// URL connects to the server's "postgres" database as user postgres.
	URL string
}

// StartPostgresServer runs initdb in a fresh directory and starts a
// PostgreSQL server on a free loopback port (as user postgres when the test
// runs as root, which PostgreSQL refuses). It is killed at cleanup. It
// fails or skips, per FENCEKIT_REQUIRE_SERVERS, when PostgreSQL's server
// binaries are not installed.
func StartPostgresServer(tb testing.TB) *PostgresServer {
	tb.Helper()
	bindir, err := postgresBinDir()
	if err != nil {
		unavailable(tb, "PostgreSQL server binaries", "pg_config --bindir and /usr/lib/postgresql/*/bin", "PATH", err)
	}
	cred, err := postgresCredential()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fencekit-pg-")
	if err != nil {
		tb.Fatalf("testenv: PostgreSQL data dir: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			tb.Fatalf("testenv: PostgreSQL data dir: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		tb.Fatalf("testenv: initdb: %v\n%s", err, out)
	}
	port := FreePort(tb)
	s := newServer("postgres", filepath.Join(bindir, "postgres"), port, dir, []string{"-D", data,
		"-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1"})
	s.cred, s.stopSig = cred, syscall.SIGINT
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", port)
	s.ready = pgxConnects(url)
	s.startForTest(tb)
	return &PostgresServer{Server: s, URL: url}
}

// pgxConnects is a readiness check: a pgx connection to url opens.
func pgxConnects(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}
}

// postgresBinDir finds PostgreSQL's server binaries: pg_config --bindir,
// else the newest /usr/lib/postgresql/N/bin (Debian's layout).
func postgresBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", fmt.Errorf("initdb not found; install Debian's postgresql package")
	}
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	return filepath.Dir(dirs[len(dirs)-1]), nil
}

func pgMajor(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// postgresCredential is the postgres user when running as root (PostgreSQL
// refuses to run as root), nil otherwise.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("testenv: PostgreSQL will not run as root and there is no postgres user: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("testenv: postgres user has uid %q gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
