package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment variables of the etcd harness.
const (
	// EnvEtcdEndpoints lists the client URLs of an etcd cluster to use,
	// comma-separated (http://127.0.0.1:2379,...). When unset, the harness
	// starts one etcd member per test binary.
	EnvEtcdEndpoints = "FENCEKIT_ETCD_ENDPOINTS"
	// EnvEtcd is the path of the etcd binary (default: PATH, then
	// $GOPATH/bin, where `make tools` installs it).
	EnvEtcd = "FENCEKIT_ETCD"
)

// Raft timing of the members the harness starts: quicker than etcd's
// defaults (100ms, 1000ms) so that fault tests see a new leader within a
// second. etcd's shortest lease TTL is 1.5 election timeouts rounded up to
// whole seconds: 1s here, 2s with the defaults.
const (
	etcdHeartbeatMs = "50"
	etcdElectionMs  = "500"
)

// EtcdEnv is one test's view of an etcd cluster.
type EtcdEnv struct {
	// Endpoints are the cluster's client URLs, for clientv3.Config.
	Endpoints []string
	// Prefix is unique to this test and ends with '/'. Every key under it
	// is deleted at cleanup.
	Prefix string
}

var etcdServer resolved

// sharedEtcd is the member Etcd started for the test binary, stopped by Main.
var sharedEtcd *EtcdCluster

// Etcd returns the test's etcd environment: the cluster named by
// FENCEKIT_ETCD_ENDPOINTS when set, else one member the harness starts
// once for the test binary's lifetime (stopped by [Main], or killed when
// the binary exits), which does not fsync its writes. Without an etcd
// binary or a reachable cluster the test fails under
// FENCEKIT_REQUIRE_SERVERS=1 and skips otherwise.
func Etcd(tb testing.TB) *EtcdEnv {
	tb.Helper()
	etcdServer.once.Do(resolveEtcd)
	if etcdServer.err != nil {
		unavailable(tb, "etcd", etcdServer.where, EnvEtcdEndpoints, etcdServer.err)
	}
	env := &EtcdEnv{Endpoints: strings.Split(etcdServer.where, ","), Prefix: "fk-" + uniqueID(tb) + "/"}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := etcdDeletePrefix(ctx, env.Endpoints[0], env.Prefix); err != nil {
			tb.Errorf("testenv: clean up etcd keys under %s: %v", env.Prefix, err)
		}
	})
	return env
}

// EtcdCluster is a private etcd cluster for fault tests: a test may stop,
// kill, pause and restart its members (each keeps its ports and data).
type EtcdCluster struct {
	Members   []*EtcdMember
	Endpoints []string // the members' client URLs, in member order
}

// EtcdMember is one member of an [EtcdCluster]. Server.Addr is its client
// address.
type EtcdMember struct {
	*Server
	ClientURL string
	PeerURL   string
}

// StartEtcdCluster starts a private cluster of n members on free loopback
// ports and waits until every member reports healthy (a leader elected).
// Its members fsync as in production (the member [Etcd] starts does not).
// It is killed at cleanup.
func StartEtcdCluster(tb testing.TB, n int) *EtcdCluster {
	tb.Helper()
	var c *EtcdCluster
	startGroup(tb, "etcd", func(dir string) (err error) {
		c, err = launchEtcdCluster(dir, n, true)
		return err
	}, func() {
		if c != nil {
			c.kill()
		}
	})
	return c
}

// WaitHealthy waits until every running member reports a leader, or ctx ends.
func (c *EtcdCluster) WaitHealthy(ctx context.Context) error {
	servers := make([]*Server, len(c.Members))
	for i, m := range c.Members {
		servers[i] = m.Server
	}
	return waitEach(ctx, servers, "etcd member", "healthy", func(ctx context.Context, s *Server) error {
		return etcdHealthy(ctx, "http://"+s.Addr)
	})
}

// Leader returns the index in Members of the leader, as the running members
// that answer within a second report it.
func (c *EtcdCluster) Leader(ctx context.Context) (int, error) {
	ids := map[string]int{} // member id -> index
	leader := ""
	for i, m := range c.Members {
		if !m.Running() {
			continue
		}
		var st struct {
			Header struct {
				MemberID string `json:"member_id"`
			} `json:"header"`
			Leader string `json:"leader"`
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := etcdCall(cctx, m.ClientURL, "/v3/maintenance/status", struct{}{}, &st)
		cancel()
		if err != nil {
			continue // down or paused
		}
		ids[st.Header.MemberID] = i
		if st.Leader != "" && st.Leader != "0" {
			leader = st.Leader
		}
	}
	if i, ok := ids[leader]; ok {
		return i, nil
	}
	return -1, fmt.Errorf("testenv: no running etcd member reports a running leader (leader %q)", leader)
}

func (c *EtcdCluster) kill() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// launchEtcdCluster starts n members with data under dir and waits until
// they are healthy. Without fsync a member's writes reach the page cache
// only, which a SIGKILLed member keeps: enough for tests of the protocol,
// and much quicker on a slow disk.
func launchEtcdCluster(dir string, n int, fsync bool) (*EtcdCluster, error) {
	bin, err := toolPath("etcd", EnvEtcd)
	if err != nil {
		return nil, err
	}
	c := &EtcdCluster{}
	var initial []string
	for i := range n {
		cport, err1 := freePort()
		pport, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		name := "m" + strconv.Itoa(i)
		m := &EtcdMember{ClientURL: "http://127.0.0.1:" + strconv.Itoa(cport), PeerURL: "http://127.0.0.1:" + strconv.Itoa(pport)}
		m.Server = newServer("etcd-"+name, bin, cport, dir, nil)
		c.Members = append(c.Members, m)
		c.Endpoints = append(c.Endpoints, m.ClientURL)
		initial = append(initial, name+"="+m.PeerURL)
	}
	for i, m := range c.Members {
		name := "m" + strconv.Itoa(i)
		m.args = []string{"--name", name, "--data-dir", filepath.Join(dir, name+".etcd"),
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(dir),
			"--heartbeat-interval", etcdHeartbeatMs, "--election-timeout", etcdElectionMs,
			"--log-level", "warn"}
		if !fsync {
			m.args = append(m.args, "--unsafe-no-fsync")
		}
		// A member alone cannot become healthy: each is ready when its
		// client port accepts connections, the cluster when all are healthy.
		addr := m.Addr
		m.ready = func(ctx context.Context) error { return waitTCP(ctx, addr) }
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: etcd data dir: %w", err)
	}
	for _, m := range c.Members {
		if err := m.Start(context.Background()); err != nil {
			c.kill()
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		c.kill()
		return nil, fmt.Errorf("%w\n%s", err, c.Members[0].logTail())
	}
	return c, nil
}

// etcdHealthy asks a member's /health endpoint, which answers true once
// the cluster has a leader and the member can serve requests.
func etcdHealthy(ctx context.Context, clientURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("etcd /health: %w", err)
	}
	if h.Health != "true" {
		return fmt.Errorf("etcd /health: %s %s", h.Health, h.Reason)
	}
	return nil
}

// etcdDeletePrefix deletes every key under prefix through etcd's JSON
// gateway, so that the harness needs no etcd client library.
func etcdDeletePrefix(ctx context.Context, clientURL, prefix string) error {
	end := []byte(prefix)
	end[len(end)-1]++ // prefix ends with '/': the next byte bounds the range
	req := map[string]string{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
	}
	return etcdCall(ctx, clientURL, "/v3/kv/deleterange", req, nil)
}

// etcdCall posts a JSON request to etcd's gRPC gateway and decodes the reply
// into out (when not nil).
func etcdCall(ctx context.Context, clientURL, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, clientURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// resolveEtcd finds the cluster Etcd uses, starting one member when
// FENCEKIT_ETCD_ENDPOINTS is unset; run once, through etcdServer.once.
func resolveEtcd() {
	if eps, set := getenv(EnvEtcdEndpoints, ""); set {
		etcdServer.where = eps
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		defer cancel()
		etcdServer.err = etcdHealthy(ctx, strings.Split(eps, ",")[0])
		return
	}
	dir := filepath.Join(os.TempDir(), "fencekit-etcd-"+strconv.Itoa(os.Getpid()))
	c, err := launchEtcdCluster(dir, 1, false)
	if err != nil {
		etcdServer.where, etcdServer.err = "an etcd started by the harness", err
		return
	}
	sharedEtcd = c
	etcdServer.where = strings.Join(c.Endpoints, ",")
}
