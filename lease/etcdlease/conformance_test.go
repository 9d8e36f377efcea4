package etcdlease

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

const (
	envEndpoints = "LEASETEST_ETCD_ENDPOINTS"
	envPrefix    = "LEASETEST_ETCD_PREFIX"
)

// etcdIssuer runs the suite with 2s leases: whole seconds, and a renew
// interval (TTL/3) longer than etcd's 500ms expiry check, so that a killed
// holder is taken over within TTL + one renew interval.
var etcdIssuer = leasetest.Issuer{
	Name:   "etcd",
	TTL:    2 * time.Second,
	BadTTL: 1500 * time.Millisecond,
	NoBump: true,
	Open:   func(t testing.TB) leasetest.Namespace { return etcdNS{testenv.Etcd(t)} },
	FromEnv: func(context.Context) (*lease.Client, error) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(os.Getenv(envEndpoints), ","), DialTimeout: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		return New(cli, &lease.Options{KeyPrefix: os.Getenv(envPrefix)})
	},
}

func init() { leasetest.Register(etcdIssuer) }

func TestConformance(t *testing.T) { leasetest.Run(t, etcdIssuer) }

type etcdNS struct{ env *testenv.EtcdEnv }

func (ns etcdNS) Env() []string {
	return []string{envEndpoints + "=" + strings.Join(ns.env.Endpoints, ","), envPrefix + "=" + strings.TrimSuffix(ns.env.Prefix, "/")}
}

func (ns etcdNS) Client(t testing.TB, opts *lease.Options) *leasetest.Conn {
	cli, sent := countingClient(t, ns.env.Endpoints)
	o := lease.Options{}
	if opts != nil {
		o = *opts
	}
	o.KeyPrefix = strings.TrimSuffix(ns.env.Prefix, "/")
	c, err := New(cli, &o)
	if err != nil {
		t.Fatal(err)
	}
	leasetest.CloseAtCleanup(t, c)
	return &leasetest.Conn{Client: c, Cut: func() { cli.Close() }, Sent: sent.Load}
}

// countingClient returns a client of endpoints that counts the RPCs it
// starts (unary calls and streams), closed at cleanup.
func countingClient(t testing.TB, endpoints []string) (*clientv3.Client, *atomic.Int64) {
	t.Helper()
	sent := new(atomic.Int64)
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		sent.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		sent.Add(1)
		return streamer(ctx, desc, cc, method, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli, sent
}
