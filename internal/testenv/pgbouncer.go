package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// PgBouncer is a private PgBouncer in transaction pooling mode, in front of
// the PostgreSQL server the harness uses (FENCEKIT_POSTGRES_URL). Every
// database name is passed through to that server.
type PgBouncer struct {
	*Server
}

// pgbouncerBin is where Debian's pgbouncer package installs the program.
const pgbouncerBin = "/usr/sbin/pgbouncer"

// StartPgBouncer starts Debian's pgbouncer on a free loopback port with
// pool_mode = transaction, auth_type = trust, default_pool_size = 10 (as
// user postgres when the test runs as root, which PgBouncer refuses). It
// is killed at cleanup. It fails or skips, per FENCEKIT_REQUIRE_SERVERS,
// when pgbouncer is not installed (`make tools` installs it).
func StartPgBouncer(tb testing.TB) *PgBouncer {
	tb.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin, err = pgbouncerBin, nil
		if _, serr := os.Stat(bin); serr != nil {
			unavailable(tb, "pgbouncer", "PATH and "+pgbouncerBin, "PATH", fmt.Errorf("not installed; run make tools (Debian's pgbouncer package)"))
		}
	}
	base, err := url.Parse(postgresBase(tb))
	if err != nil {
		tb.Fatalf("testenv: parse %s: %v", EnvPostgresURL, err)
	}
	host, port := base.Hostname(), base.Port()
	if port == "" {
		port = "5432"
	}
	cred, err := postgresCredential()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fencekit-pgbouncer-")
	if err != nil {
		tb.Fatalf("testenv: pgbouncer dir: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	user := base.User.Username()
	if user == "" {
		user = "postgres"
	}
	listen := FreePort(tb)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 10
`, host, port, listen, filepath.Join(dir, "users.txt"))
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": strconv.Quote(user) + ` ""` + "\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatalf("testenv: pgbouncer %s: %v", name, err)
		}
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			tb.Fatalf("testenv: pgbouncer dir: %v", err)
		}
	}
	s := newServer("pgbouncer", bin, listen, dir, []string{filepath.Join(dir, "pgbouncer.ini")})
	s.cred = cred
	b := &PgBouncer{Server: s}
	readyURL := b.URL(tb, base.String())
	s.ready = pgxConnects(readyURL)
	s.startForTest(tb)
	return b
}

// URL returns dbURL (a postgres:// URL of the harness's server, such as a
// [PostgresDatabase]'s URL) with its host and port replaced by the
// bouncer's. PgBouncer refuses startup parameters other than a few
// (search_path among them): pass URLs without them.
func (b *PgBouncer) URL(tb testing.TB, dbURL string) string {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatalf("testenv: parse %q: %v", redactURL(dbURL), err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	return u.String()
}
