package lease_test

import (
	osexec "os/exec"
	"strings"
	"testing"
)

// TestIssuersLinkOnlyTheirDriver checks that the generic client links no
// driver, and that an issuer links no other issuer's driver: a pglease or
// sqlfence user does not compile go-redis.
func TestIssuersLinkOnlyTheirDriver(t *testing.T) {
	gocmd, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the dependencies:", err)
	}
	const (
		goRedis = "github.com/redis/go-redis/"
		pgx     = "github.com/jackc/pgx/"
		etcd    = "go.etcd.io/etcd/"
		zk      = "github.com/go-zookeeper/"
	)
	for pkg, banned := range map[string][]string{
		"github.com/fencekit/fencekit/lease":            {goRedis, pgx, etcd, zk},
		"github.com/fencekit/fencekit/lease/pglease":    {goRedis, etcd, zk},
		"github.com/fencekit/fencekit/lease/redislease": {pgx, etcd, zk},
		"github.com/fencekit/fencekit/sqlfence":         {goRedis, etcd, zk},
	} {
		out, err := osexec.Command(gocmd, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if !strings.Contains(string(out), "github.com/fencekit/fencekit/fence\n") {
			t.Fatalf("go list -deps %s does not list fence: not the listing this test expects:\n%s", pkg, out)
		}
		for dep := range strings.Lines(string(out)) {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s", pkg, strings.TrimSpace(dep))
				}
			}
		}
	}
}
