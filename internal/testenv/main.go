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
