// Command fenceplay builds the playground (the simulator compiled to
// WebAssembly behind one page) and serves it on a loopback address, or
// builds it into a folder for any static file server (make playground).
//
// Usage:
//
//	fenceplay [-addr HOST:PORT] [-dir DIR] | fenceplay -build DIR
//
// It lives apart from fencesim so that `make demo` compiles only the
// simulator, not an HTTP server. Bad flags exit with status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fencekit/fencekit/internal/playground"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usageErr(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "fenceplay: "+format+"\n", args...)
	fmt.Fprintln(stderr, "usage: fenceplay [-addr HOST:PORT] [-dir DIR] | fenceplay -build DIR")
	return exitUsage
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fenceplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "`HOST:PORT` to listen on (port 0: any free port)")
	dir := fs.String("dir", "", "serve this folder built by make playground instead of building one")
	build := fs.String("build", "", "build the playground into `DIR` and exit without serving (what make playground runs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // flag has printed the error and the defaults
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, "fenceplay takes no arguments, got %q", fs.Arg(0))
	}
	if *dir != "" && *build != "" {
		return usageErr(stderr, "-dir and -build do not go together")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *build != "" {
		if err := playground.Build(ctx, *build); err != nil {
			fmt.Fprintf(stderr, "fenceplay: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "fenceplay: built the playground in %s; serve it with any static file server\n", *build)
		return exitOK
	}
	root := *dir
	if root != "" {
		if _, err := os.Stat(filepath.Join(root, "fencesim.wasm")); err != nil {
			return usageErr(stderr, "-dir %s has no fencesim.wasm; build it with make playground", root)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "fenceplay: %v (-addr 127.0.0.1:0 picks a free port)\n", err)
		return exitFailed
	}
	defer ln.Close()
	if root == "" {
		tmp, err := os.MkdirTemp("", "fenceplay-")
		if err != nil {
			fmt.Fprintf(stderr, "fenceplay: %v\n", err)
			return exitFailed
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintln(stderr, "fenceplay: building the playground (the WebAssembly takes a while the first time)")
		if err := playground.Build(ctx, tmp); err != nil {
			fmt.Fprintf(stderr, "fenceplay: %v\nfenceplay: outside the fencekit repository, build the folder there with make playground and pass -dir\n", err)
			return exitFailed
		}
		root = tmp
	}
	fmt.Fprintf(stdout, "fenceplay: the playground is at http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	if err := serve(ctx, ln, root); err != nil {
		fmt.Fprintf(stderr, "fenceplay: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// serve serves the folder root on ln until ctx ends.
func serve(ctx context.Context, ln net.Listener, root string) error {
	files := http.FileServer(http.Dir(root))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-cache") // a rebuilt wasm is picked up on reload
			files.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutCtx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
