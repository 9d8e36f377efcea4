// Package modcheck tests fencekit's modules the way a user meets them:
// fetched through a module proxy into a fresh module outside the
// repository, without the go.work that joins them in a checkout.
package modcheck

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const root = "github.com/fencekit/fencekit"

// notUsers are the folders of the repository's modules that no user
// imports or installs: peer benchmarks, the etcd build, the browser and
// metrics tests.
var notUsers = []string{"bench", "tools", "internal/playground/browser", "internal/metricstest"}

// module is one of the repository's modules.
type module struct {
	path string // module path
	dir  string // its folder, absolute
}

// repoModules lists the repository's modules, root first, and whether
// users import each.
func repoModules(t *testing.T, top string) (mods []module, forUsers []bool) {
	t.Helper()
	err := filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			rel, _ := filepath.Rel(top, filepath.Dir(p))
			mods = append(mods, module{path: modulePath(t, p), dir: filepath.Dir(p)})
			forUsers = append(forUsers, !slices.ContainsFunc(notUsers, func(n string) bool {
				return rel == n || strings.HasPrefix(rel, n+"/")
			}))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(mods, func(m module) bool { return m.path == root }); i > 0 { // root first
		mods[0], mods[i] = mods[i], mods[0]
		forUsers[0], forUsers[i] = forUsers[i], forUsers[0]
	}
	if len(mods) < 2 || mods[0].path != root {
		t.Fatalf("modules found: %v", mods)
	}
	return mods, forUsers
}

func modulePath(t *testing.T, gomod string) string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no module line", gomod)
	}
	return string(m[1])
}

// release returns the version of fencekit the other modules require, and
// checks they agree on one a proxy can serve (not the zero pseudo-version
// a replace directive papers over).
func release(t *testing.T, mods []module) string {
	t.Helper()
	version := ""
	req := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(root) + `(?:/\S+)?\s+(v\S+)`)
	for _, m := range mods[1:] {
		b, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range req.FindAllSubmatch(b, -1) {
			switch {
			case strings.HasPrefix(string(v[1]), "v0.0.0-00010101000000"):
				t.Errorf("%s requires %s %s, a version no proxy can serve: a user who requires %s cannot build", m.path, root, v[1], m.path)
			case version != "" && version != string(v[1]):
				t.Errorf("%s requires %s %s, another module %s", m.path, root, v[1], version)
			}
			version = string(v[1])
		}
	}
	if version == "" || strings.HasPrefix(version, "v0.0.0-00010101000000") {
		version = "v0.3.0" // what the proxy serves when nothing names a usable version
	}
	return version
}

// writeProxy lays out a file-system module proxy in dir serving the
// modules of mods marked in serve at version, made from the files git
// tracks (as they are in the work tree), without nested modules' files.
func writeProxy(t *testing.T, top, dir, version string, mods []module, serve []bool) {
	t.Helper()
	out, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	owner := func(rel string) module { // the innermost module holding rel
		best := mods[0]
		for _, m := range mods {
			r, _ := filepath.Rel(top, m.dir)
			if strings.HasPrefix(rel, r+"/") && len(m.dir) > len(best.dir) {
				best = m
			}
		}
		return best
	}
	for i, m := range mods {
		if !serve[i] {
			continue
		}
		base := filepath.Join(dir, strings.ToLower(m.path), "@v")
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(base, version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		mrel, _ := filepath.Rel(top, m.dir)
		for _, rel := range files {
			if owner(rel) != m {
				continue
			}
			inMod := rel
			if mrel != "." {
				inMod = strings.TrimPrefix(rel, mrel+"/")
			}
			body, err := os.ReadFile(filepath.Join(top, rel))
			if os.IsNotExist(err) {
				continue // deleted in the work tree
			}
			if err != nil {
				t.Fatal(err)
			}
			w, err := zw.Create(m.path + "@" + version + "/" + inMod)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		gomod, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := json.Marshal(map[string]string{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
		for name, body := range map[string][]byte{version + ".mod": gomod, version + ".info": info, "list": []byte(version + "\n")} {
			if err := os.WriteFile(filepath.Join(base, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// goCmd runs the go command in dir as a user would, with only the test's
// proxy and the public modules already in this machine's module cache.
func goCmd(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// packagesOf lists the importable packages of a module: not internal, not
// commands, not tests.
func packagesOf(t *testing.T, m module) (libs, cmds []string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...")
	cmd.Dir = m.dir
	cmd.Env = os.Environ() // in the checkout's workspace
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", m.dir, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		path, name, _ := strings.Cut(sc.Text(), " ")
		switch {
		case strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal"):
		case name == "main":
			cmds = append(cmds, path)
		default:
			libs = append(libs, path)
		}
	}
	return libs, cmds
}

// userSum makes a fresh module in a temporary folder whose main.go imports pkgs (after go get of each of gets), tidies and
// builds it, and returns the modules its go.sum names.
func userSum(t *testing.T, env []string, gets, pkgs []string) (lines []string, mods map[string]bool) {
	t.Helper()
	user := t.TempDir()
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t_ %q\n", p)
	}
	b.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(user, "main.go"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/user\n\ngo 1.26\n"
	if err := os.WriteFile(filepath.Join(user, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, g := range gets {
		goCmd(t, env, user, "get", g)
	}
	goCmd(t, env, user, "mod", "tidy")
	goCmd(t, env, user, "build", "./...")
	sum, err := os.ReadFile(filepath.Join(user, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(string(sum)), "\n")
	mods = map[string]bool{}
	for _, l := range lines {
		mods[strings.Fields(l)[0]] = true
	}
	return lines, mods
}

// driverBrings are test-only modules that a module's driver brings to its
// users whatever fencekit does: gRPC, which etcd's client needs, requires
// the OpenTelemetry SDK.
var driverBrings = map[string]map[string]bool{
	"lease/etcdlease": {"go.opentelemetry.io/otel/sdk": true, "go.opentelemetry.io/otel/sdk/metric": true},
}

// testOnly are modules that only the repository's tests, demos and peer
// benchmarks use; a user's go.sum must not name them.
var testOnly = []string{
	"github.com/testcontainers/", "github.com/docker/", "github.com/chromedp/",
	"github.com/prometheus/", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/",
	"github.com/bsm/redislock", "github.com/go-redsync/", "github.com/anishathalye/porcupine",
}

// TestUsersCanGoGet: every module a user imports resolves and builds in a
// fresh module outside the repository through a proxy, and the user's
// go.sum names no module that only fencekit's tests need.
func TestUsersCanGoGet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module from a proxy (about a minute)")
	}
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	all, forUsers := repoModules(t, top)
	var mods []module
	for i, m := range all {
		if forUsers[i] {
			mods = append(mods, m)
		}
	}
	version := release(t, mods)
	proxy := t.TempDir()
	writeProxy(t, top, proxy, version, all, forUsers)
	cache := strings.TrimSpace(goCmd(t, os.Environ(), top, "env", "GOMODCACHE"))
	upstream := strings.TrimSpace(goCmd(t, os.Environ(), top, "env", "GOPROXY"))
	home := t.TempDir()
	// fencekit's modules come only from the proxy built here (no registry
	// has v0.3.0); other modules from the local cache, else from the
	// machine's registry (a fresh machine's cache lacks what only a user's
	// go get and tidy read).
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download"))+","+upstream,
		"GOSUMDB=off", "GOWORK=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local",
		"GOMODCACHE="+filepath.Join(home, "mod"), "GOBIN="+filepath.Join(home, "bin"))
	for _, m := range mods {
		libs, cmds := packagesOf(t, m)
		name := strings.TrimPrefix(strings.TrimPrefix(m.path, root), "/")
		if name == "" {
			name = "root"
		}
		t.Run(name, func(t *testing.T) {
			if len(libs) > 0 {
				lines, mods := userSum(t, env, []string{m.path + "@" + version}, libs)
				for mod := range mods {
					for _, bad := range testOnly {
						if strings.HasPrefix(mod, bad) && !driverBrings[name][mod] {
							t.Errorf("a user of %s inherits %s", m.path, mod)
						}
					}
				}
				t.Logf("a user importing every package of %s: %d go.sum lines", m.path, len(lines))
			}
			for _, c := range cmds {
				goCmd(t, env, top, "install", c+"@"+version)
			}
		})
	}
}

// TestGoDirectiveIsTheOldestNeeded: the root module's go line names the
// oldest Go its dependencies allow (no patch release forced on users).
func TestGoDirectiveIsTheOldestNeeded(t *testing.T) {
	top, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(top, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{.GoVersion}}{{end}}", "all")
	cmd.Dir = top
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	need := "1.21"
	for _, v := range strings.Fields(string(out)) {
		if versionLess(need, v) {
			need = v
		}
	}
	if got := string(m[1]); got != need && got+".0" != need && got != need+".0" {
		t.Errorf("go.mod says go %s; the dependencies need %s, so users are forced onto %s for nothing", got, need, got)
	}
}

// versionLess compares Go versions such as 1.24 and 1.26.0.
func versionLess(a, b string) bool {
	parse := func(s string) []int {
		var n []int
		for _, f := range strings.Split(s, ".") {
			var x int
			fmt.Sscanf(f, "%d", &x)
			n = append(n, x)
		}
		for len(n) < 3 {
			n = append(n, 0)
		}
		return n
	}
	return slices.Compare(parse(a), parse(b)) < 0
}
