// Package bench compares fencekit with its peers on the same local servers:
// leases against github.com/go-redsync/redsync/v4, github.com/bsm/redislock
// and a hand-written go-redis baseline (one operation at a time, 64 clients
// saturating one Redis, one client holding 10,000 leases); fenced SQL writes (sqlfence) against
// plain UPDATEs and transactions; fenced S3 puts (blobfence) against plain
// puts.
//
// It is a separate module so that the library's go.mod names no peer. The
// benchmarks live in the package's _test.go files; this package holds the
// harness they share: the servers ([Servers]), the Redis command counter
// ([CommandStats]), latency samples ([Samples]) and the lock adapters
// ([Locker]) that put every library behind one small interface.
//
// Servers are found through the same variables as fencekit's tests:
//
//	FENCEKIT_REDIS_ADDR    Redis host:port. When unset, the benchmarks start a
//	                       private redis-server (no persistence) on a free
//	                       loopback port, so that INFO commandstats counts only
//	                       their own commands; without redis-server in PATH
//	                       they use 127.0.0.1:6379.
//	FENCEKIT_POSTGRES_URL  PostgreSQL (default postgres://postgres@127.0.0.1:5432/test);
//	                       the benchmarks work in a schema of their own and
//	                       drop it afterwards.
//	FENCEKIT_S3_ENDPOINT   S3 endpoint (with FENCEKIT_S3_ACCESS_KEY and
//	                       FENCEKIT_S3_SECRET_KEY). When unset, the benchmarks
//	                       start versitygw (FENCEKIT_VERSITYGW, PATH, then
//	                       $GOPATH/bin) with a posix backend in a temporary
//	                       directory.
//
// run.sh runs every benchmark in interleaved rounds and summarizes them; see
// docs/performance.md for the results and how to read them.
package bench
