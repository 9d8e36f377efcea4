package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment variables read by the harness.
const (
	EnvRedisAddr      = "FENCEKIT_REDIS_ADDR"
	EnvPostgresURL    = "FENCEKIT_POSTGRES_URL"
	EnvS3Endpoint     = "FENCEKIT_S3_ENDPOINT"
	EnvS3AccessKey    = "FENCEKIT_S3_ACCESS_KEY"
	EnvS3SecretKey    = "FENCEKIT_S3_SECRET_KEY"
	EnvS3Server       = "FENCEKIT_S3_SERVER"
	EnvVersitygw      = "FENCEKIT_VERSITYGW"
	EnvWeed           = "FENCEKIT_WEED"
	EnvRequireServers = "FENCEKIT_REQUIRE_SERVERS"
)

// Defaults used when the variables are unset.
const (
	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test"
)

// dialTimeout bounds every reachability check.
const dialTimeout = 3 * time.Second

// Required reports whether FENCEKIT_REQUIRE_SERVERS asks for missing servers
// to fail tests instead of skipping them.
func Required() bool {
	v, _ := strconv.ParseBool(os.Getenv(EnvRequireServers))
	return v
}

// unavailable ends the test: a failure under FENCEKIT_REQUIRE_SERVERS=1, a
// skip otherwise. The message names the server, where it was looked for, why
// it failed and the variable that configures it.
func unavailable(tb testing.TB, server, where, envVar string, err error) {
	tb.Helper()
	msg := fmt.Sprintf("testenv: %s unreachable at %s: %v; start it, or set %s to where it runs", server, where, err, envVar)
	if Required() {
		tb.Fatal(msg + " (failing because " + EnvRequireServers + "=1)")
	}
	tb.Skip(msg + " (skipping; set " + EnvRequireServers + "=1 to fail instead)")
}

// resolved memoizes, per server kind, where the server is (or why not), so
// that a package's tests probe and start each server once.
type resolved struct {
	once  sync.Once
	where string // address, URL or endpoint
	extra any    // server-specific: credentials, container handle
	err   error
}

// getenv returns the variable's value and whether it was set to something.
func getenv(name, def string) (string, bool) {
	if v := os.Getenv(name); v != "" {
		return v, true
	}
	return def, false
}

// uniqueID returns a short name for tb that is unique across processes:
// the test name folded to [a-z0-9-] and cut, plus 8 random hex digits.
func uniqueID(tb testing.TB) string {
	var b strings.Builder
	for _, r := range strings.ToLower(tb.Name()) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if s := b.String(); s != "" && s[len(s)-1] != '-' {
				b.WriteByte('-')
			}
		}
		if b.Len() >= 32 {
			break
		}
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		tb.Fatalf("testenv: random id: %v", err)
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "t"
	}
	return name + "-" + hex.EncodeToString(rnd[:])
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts TCP connections or ctx ends.
func waitTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not accepting connections: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
