package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Environment variables of the ZooKeeper harness.
const (
	// EnvZooKeeper lists the client addresses of a ZooKeeper ensemble to
	// use, comma-separated (127.0.0.1:2181,...). When unset, the harness
	// starts one server per test binary from Debian's zookeeper package.
	EnvZooKeeper = "FENCEKIT_ZOOKEEPER"
)

// zkJar is the server jar Debian's zookeeper package installs (`make tools`);
// its manifest names the libraries it needs.
const zkJar = "/usr/share/java/zookeeper.jar"

// zkTickMs is the tick of the servers the harness starts: the session
// timeouts it allows run from 2 ticks to maxSessionTimeout, and sessions
// expire within one tick of their timeout (ZooKeeper's default tick is 2s).
const zkTickMs = 100

// ZooKeeperEnv is one test's view of a ZooKeeper ensemble.
type ZooKeeperEnv struct {
	// Servers are the client addresses, for zk.Connect.
	Servers []string
	// Root is a znode path unique to this test ("/fk-..."), without a
	// trailing slash. The tree under it is deleted at cleanup.
	Root string
}

var zkServer resolved

// sharedZK is the server ZooKeeper started for the test binary, stopped by Main.
var sharedZK *ZooKeeperEnsemble

// ZooKeeper returns the test's ZooKeeper environment: the ensemble named by
// FENCEKIT_ZOOKEEPER when set, else one server the harness starts once for
// the test binary's lifetime (stopped by [Main], or killed when the binary
// exits). Without java and Debian's zookeeper package, or a reachable
// ensemble, the test fails under FENCEKIT_REQUIRE_SERVERS=1 and skips
// otherwise.
func ZooKeeper(tb testing.TB) *ZooKeeperEnv {
	tb.Helper()
	zkServer.once.Do(resolveZooKeeper)
	if zkServer.err != nil {
		unavailable(tb, "ZooKeeper", zkServer.where, EnvZooKeeper, zkServer.err)
	}
	env := &ZooKeeperEnv{Servers: strings.Split(zkServer.where, ","), Root: "/fk-" + uniqueID(tb)}
	tb.Cleanup(func() {
		if err := ZooKeeperDeleteTree(env.Servers, env.Root); err != nil {
			tb.Errorf("testenv: clean up ZooKeeper tree %s: %v", env.Root, err)
		}
	})
	return env
}

// ZooKeeperEnsemble is a private ensemble for fault tests: a test may stop,
// kill, pause and restart its servers (each keeps its ports and data).
type ZooKeeperEnsemble struct {
	Members []*Server // Addr is each member's client address
	Servers []string  // the members' client addresses, in member order
}

// StartZooKeeperEnsemble starts a private ensemble of n servers on free
// loopback ports (n == 1: a standalone server) and waits until every member
// serves requests (a leader elected). Its members fsync their log as in
// production (the server [ZooKeeper] starts does not). It is killed at
// cleanup.
func StartZooKeeperEnsemble(tb testing.TB, n int) *ZooKeeperEnsemble {
	tb.Helper()
	var e *ZooKeeperEnsemble
	startGroup(tb, "zookeeper", func(dir string) (err error) {
		e, err = launchZooKeeper(dir, n, true)
		return err
	}, func() {
		if e != nil {
			e.kill()
		}
	})
	return e
}

// WaitServing waits until every running member serves requests, or ctx ends.
func (e *ZooKeeperEnsemble) WaitServing(ctx context.Context) error {
	return waitEach(ctx, e.Members, "ZooKeeper", "serving", func(ctx context.Context, s *Server) error {
		return zkServing(ctx, s.Addr)
	})
}

// Leader returns the index in Members of the member that reports itself
// the leader (4lw srvr), or an error when none does.
func (e *ZooKeeperEnsemble) Leader(ctx context.Context) (int, error) {
	for i, m := range e.Members {
		if !m.Running() {
			continue
		}
		out, err := FourLetterWord(ctx, m.Addr, "srvr")
		if err == nil && strings.Contains(out, "Mode: leader") {
			return i, nil
		}
	}
	return -1, errors.New("testenv: no running ZooKeeper member reports itself the leader")
}

func (e *ZooKeeperEnsemble) kill() {
	for _, m := range e.Members {
		m.Kill()
	}
}

// launchZooKeeper writes a zoo.cfg per member under dir and starts n
// servers; a 1-server "ensemble" runs standalone.
func launchZooKeeper(dir string, n int, fsync bool) (*ZooKeeperEnsemble, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed (%v); run `make tools` (Debian's zookeeper package)", err)
	}
	if _, err := os.Stat(zkJar); err != nil {
		return nil, fmt.Errorf("%s: %w; run `make tools` (Debian's zookeeper package)", zkJar, err)
	}
	type ports struct{ client, peer, election int }
	ps := make([]ports, n)
	var quorum []string
	for i := range ps {
		c, err1 := freePort()
		p, err2 := freePort()
		l, err3 := freePort()
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		ps[i] = ports{c, p, l}
		quorum = append(quorum, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i+1, p, l))
	}
	e := &ZooKeeperEnsemble{}
	for i, p := range ps {
		mdir := filepath.Join(dir, "zk"+strconv.Itoa(i+1))
		if err := os.MkdirAll(filepath.Join(mdir, "data"), 0o755); err != nil {
			return nil, fmt.Errorf("testenv: ZooKeeper data dir: %w", err)
		}
		cfg := []string{
			"tickTime=" + strconv.Itoa(zkTickMs),
			"dataDir=" + filepath.Join(mdir, "data"),
			"clientPort=" + strconv.Itoa(p.client),
			"clientPortAddress=127.0.0.1",
			"maxSessionTimeout=120000",
			"admin.enableServer=false",
			"4lw.commands.whitelist=srvr,ruok,wchp,cons",
			"forceSync=" + map[bool]string{true: "yes", false: "no"}[fsync],
		}
		if n > 1 {
			cfg = append(cfg, "initLimit=100", "syncLimit=20", "standaloneEnabled=false")
			cfg = append(cfg, quorum...)
			if err := os.WriteFile(filepath.Join(mdir, "data", "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
				return nil, err
			}
		}
		cfgPath := filepath.Join(mdir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		// A small heap, one GC thread and the quick JIT: the machine has 2 cores.
		args := []string{"-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.jmx.log4j.disable=true",
			"-cp", zkJar + ":/usr/share/java/slf4j-simple.jar",
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath}
		s := newServer("zookeeper-"+strconv.Itoa(i+1), java, p.client, mdir, args)
		addr := s.Addr
		if n > 1 {
			// A member alone cannot serve: each is ready when its client
			// port accepts connections, the ensemble when all serve.
			s.ready = func(ctx context.Context) error { return waitTCP(ctx, addr) }
		} else {
			s.ready = func(ctx context.Context) error { return zkServing(ctx, addr) }
		}
		e.Members = append(e.Members, s)
		e.Servers = append(e.Servers, s.Addr)
	}
	for _, m := range e.Members {
		if err := m.Start(context.Background()); err != nil {
			e.kill()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := e.WaitServing(ctx); err != nil {
		e.kill()
		return nil, fmt.Errorf("%w\n%s", err, e.Members[0].logTail())
	}
	return e, nil
}

// zkServing reports whether the server at addr serves requests: its srvr
// four-letter word names a mode (standalone, leader, follower) instead of
// "not currently serving requests".
func zkServing(ctx context.Context, addr string) error {
	out, err := FourLetterWord(ctx, addr, "srvr")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Mode: ") {
		return fmt.Errorf("ZooKeeper srvr: %q", strings.TrimSpace(out))
	}
	return nil
}

// FourLetterWord sends a ZooKeeper four-letter command (srvr, wchp, cons)
// to addr and returns the reply. The servers the harness starts allow
// srvr, ruok, wchp and cons.
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline := time.Now().Add(2 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// ZKLogger discards go-zookeeper's connection messages, for tests that
// cut connections on purpose: zk.WithLogger(testenv.ZKLogger).
var ZKLogger zk.Logger = zkQuiet{}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// ZooKeeperDeleteTree deletes root and everything under it (an example's
// clean-up, the harness's own).
func ZooKeeperDeleteTree(servers []string, root string) error {
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(ZKLogger))
	if err != nil {
		return err
	}
	defer conn.Close()
	var del func(path string) error
	del = func(path string) error {
		kids, _, err := conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := del(path + "/" + k); err != nil {
				return err
			}
		}
		if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	return del(root)
}

// stopSharedZooKeeper stops the server [ZooKeeper] started, if any.
func stopSharedZooKeeper() {
	if sharedZK != nil {
		sharedZK.kill()
		os.RemoveAll(filepath.Dir(sharedZK.Members[0].Dir))
	}
}

// resolveZooKeeper finds the ensemble ZooKeeper uses, starting one server
// when FENCEKIT_ZOOKEEPER is unset; run once, through zkServer.once.
func resolveZooKeeper() {
	if addrs, set := getenv(EnvZooKeeper, ""); set {
		zkServer.where = addrs
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		defer cancel()
		zkServer.err = zkServing(ctx, strings.Split(addrs, ",")[0])
		return
	}
	dir := filepath.Join(os.TempDir(), "fencekit-zookeeper-"+strconv.Itoa(os.Getpid()))
	e, err := launchZooKeeper(dir, 1, false)
	if err != nil {
		zkServer.where, zkServer.err = "a ZooKeeper started by the harness", err
		return
	}
	sharedZK = e
	zkServer.where = strings.Join(e.Servers, ",")
}
