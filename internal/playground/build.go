package playground

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed static
var static embed.FS

// WasmPackage is the import path of the WebAssembly entry point.
const WasmPackage = "github.com/fencekit/fencekit/internal/playground/wasm"

// Build writes the playground into dir (created if missing): the static
// page, fencesim.wasm compiled with the go command on PATH (GOOS=js
// GOARCH=wasm, from the fencekit module, so the working directory must be
// inside it), and wasm_exec.js copied from that Go's GOROOT/lib/wasm. The
// page's violation-map.svg is the embedded copy of docs/img's (make
// violation-map redraws both). The folder works from any static file
// server. Errors name the step that failed and carry the go command's
// output.
func Build(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	if err := writeStatic(dir); err != nil {
		return err
	}
	goroot, err := goCmd(ctx, nil, "env", "GOROOT")
	if err != nil {
		return err
	}
	glue, err := os.ReadFile(filepath.Join(strings.TrimSpace(goroot), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return fmt.Errorf("playground: wasm_exec.js from the Go distribution: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm_exec.js"), glue, 0o644); err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	out, err := filepath.Abs(filepath.Join(dir, "fencesim.wasm"))
	if err != nil {
		return fmt.Errorf("playground: %w", err)
	}
	if _, err := goCmd(ctx, []string{"GOOS=js", "GOARCH=wasm"}, "build", "-trimpath", "-o", out, WasmPackage); err != nil {
		return err
	}
	return nil
}

// writeStatic copies the embedded page into dir.
func writeStatic(dir string) error {
	return fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, d.Name()), data, 0o644); err != nil {
			return fmt.Errorf("playground: %w", err)
		}
		return nil
	})
}

// goCmd runs the go command with env added and returns its standard output.
func goCmd(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return "", fmt.Errorf("playground: the go command is needed to build the WebAssembly: %w", err)
		}
		return "", fmt.Errorf("playground: go %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
