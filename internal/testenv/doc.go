// Package testenv gives fencekit's tests real servers: Redis, PostgreSQL and
// an S3-compatible server, each isolated per test, plus the process helpers
// that fault tests need (private redis-servers that a test may restart, and
// child processes that a test may SIGSTOP, SIGCONT and SIGKILL).
//
// Servers are found through environment variables, defaulting to the local
// services of a development machine:
//
//	FENCEKIT_REDIS_ADDR      host:port of Redis (default 127.0.0.1:6379)
//	FENCEKIT_POSTGRES_URL    PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test)
//	FENCEKIT_S3_ENDPOINT     S3 endpoint URL; when unset, the harness starts
//	                         versitygw on a free loopback port for the test
//	                         binary's lifetime (see FENCEKIT_VERSITYGW)
//	FENCEKIT_S3_ACCESS_KEY   credentials for FENCEKIT_S3_ENDPOINT
//	FENCEKIT_S3_SECRET_KEY
//	FENCEKIT_VERSITYGW       path of the versitygw binary (default: PATH, then $GOPATH/bin)
//	FENCEKIT_ETCD_ENDPOINTS  etcd client URLs, comma-separated; when unset, the
//	                         harness starts one etcd member on free loopback
//	                         ports for the test binary's lifetime
//	FENCEKIT_ETCD            path of the etcd binary (default: PATH, then $GOPATH/bin)
//	FENCEKIT_ZOOKEEPER       ZooKeeper client addresses, comma-separated; when
//	                         unset, the harness starts one server (Debian's
//	                         zookeeper package) for the test binary's lifetime
//	FENCEKIT_REQUIRE_SERVERS set to 1 to fail, not skip, when a server is missing
//
// When a server is unreachable, the test fails naming the server and the
// variable to set when FENCEKIT_REQUIRE_SERVERS=1 (as `make test` runs), and
// skips otherwise. Nothing is started in Docker (docs/testing.md says why).
//
// Each test gets its own namespace: [Redis] a unique key prefix whose keys are
// deleted at cleanup, [Postgres] a fresh schema (dropped at cleanup),
// [PostgresDatabase] a fresh database, [S3] a fresh bucket (emptied and
// deleted at cleanup), and [Etcd] a unique key prefix (deleted at cleanup).
// [StartEtcdCluster] starts a private etcd cluster whose members a fault
// test may kill and restart.
//
// A package whose tests use [StartChild] or a harness-started S3 or etcd server calls
// [Main] from its TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
package testenv
