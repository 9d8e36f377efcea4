package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Main runs a package's tests and then stops what the harness started for
// the whole test binary (the shared versitygw, containers). When the binary
// was started by [StartChild], it runs the registered child function instead
// and exits with its code. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		fn, ok := children[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "testenv: no child registered as %q\n", name)
			os.Exit(2)
		}
		os.Exit(fn())
	}
	code := m.Run()
	stopShared()
	os.Exit(code)
}

// MainWithServers is [Main] for a package whose examples use servers the
// harness can start: before the tests run, it finds or starts each server
// named by its variable (EnvS3Endpoint, EnvEtcdEndpoints, EnvZooKeeper) and
// sets the variables docs/testing.md documents for it (for S3 also
// FENCEKIT_S3_ACCESS_KEY and FENCEKIT_S3_SECRET_KEY), so that the examples
// build their clients from the environment, as a program does. A server it
// cannot find or start is reported on stderr with the variable to set; its
// variables stay unset and the examples using it fail.
//
//	func TestMain(m *testing.M) { testenv.MainWithServers(m, testenv.EnvS3Endpoint) }
func MainWithServers(m *testing.M, envVars ...string) {
	if os.Getenv(envChild) == "" {
		for _, v := range envVars {
			exportServer(v)
		}
	}
	Main(m)
}

// exportServer resolves the server configured by envVar and sets its
// variables.
func exportServer(envVar string) {
	var r *resolved
	name := ""
	switch envVar {
	case EnvS3Endpoint:
		// The SDK's default credential chain ends at the EC2 metadata
		// address, which tests must never reach (loopback only).
		os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		name, r = "S3 server", &s3Server
		r.once.Do(resolveS3)
		if r.err == nil {
			creds := r.extra.(s3Creds)
			os.Setenv(EnvS3AccessKey, creds.access)
			os.Setenv(EnvS3SecretKey, creds.secret)
		}
	case EnvEtcdEndpoints:
		name, r = "etcd", &etcdServer
		r.once.Do(resolveEtcd)
	case EnvZooKeeper:
		name, r = "ZooKeeper", &zkServer
		r.once.Do(resolveZooKeeper)
	default:
		panic("testenv: MainWithServers: no server is configured by " + envVar)
	}
	if r.err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %s unreachable at %s: %v; start it, or set %s to where it runs (the examples fail)\n", name, r.where, r.err, envVar)
		return
	}
	os.Setenv(envVar, r.where)
}

func stopShared() {
	if sharedEtcd != nil {
		sharedEtcd.kill()
		os.RemoveAll(sharedEtcd.Members[0].Dir)
	}
	if sharedS3 != nil {
		sharedS3.Kill()
		os.RemoveAll(sharedS3.Dir)
	}
	stopSharedZooKeeper()
}
