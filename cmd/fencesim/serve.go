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

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencesim serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "`HOST:PORT` to listen on (port 0: any free port)")
	dir := fs.String("dir", "", "serve this folder built by make playground instead of building one")
	build := fs.String("build", "", "build the playground into `DIR` and exit without serving (what make playground runs)")
	usage := "fencesim serve [-addr HOST:PORT] [-dir DIR] | fencesim serve -build DIR  (the playground, in a browser)"
	if status := parseNoArgs(fs, usage, args, stdout, stderr); status >= 0 {
		return status
	}
	if *dir != "" && *build != "" {
		return usageErr(stderr, "-dir and -build do not go together")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *build != "" {
		if err := playground.Build(ctx, *build); err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "fencesim: built the playground in %s; serve it with any static file server\n", *build)
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
		fmt.Fprintf(stderr, "fencesim: %v (-addr 127.0.0.1:0 picks a free port)\n", err)
		return exitFailed
	}
	defer ln.Close()
	if root == "" {
		tmp, err := os.MkdirTemp("", "fencesim-playground-")
		if err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\n", err)
			return exitFailed
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintln(stderr, "fencesim: building the playground (the WebAssembly takes a while the first time)")
		if err := playground.Build(ctx, tmp); err != nil {
			fmt.Fprintf(stderr, "fencesim: %v\nfencesim: outside the fencekit repository, build the folder there with make playground and pass -dir\n", err)
			return exitFailed
		}
		root = tmp
	}
	fmt.Fprintf(stdout, "fencesim: the playground is at http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	if err := serve(ctx, ln, root); err != nil {
		fmt.Fprintf(stderr, "fencesim: %v\n", err)
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
