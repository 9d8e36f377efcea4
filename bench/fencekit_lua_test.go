package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
)

// FencekitLua is a diagnostic, not a library: fencekit's own Lua scripts
// (read from ../lease at run time, so always the ones being measured) run
// straight through go-redis, without the lease package's Go code (no
// heartbeat goroutine, timers, contexts or metrics). Comparing it with
// "fencekit" splits fencekit's cost into what the scripts cost and what the
// Go code around them costs. It has no waiting acquire.
type FencekitLua struct {
	c                       redis.UniversalClient
	acquire, renew, release *redis.Script
}

// luaDiag is the name of the diagnostic in BenchmarkLease.
const luaDiag = "fencekit-lua"

// NewFencekitLua loads the scripts from the redislease package's directory.
func NewFencekitLua(c redis.UniversalClient) (*FencekitLua, error) {
	read := func(name string) (*redis.Script, error) {
		b, err := os.ReadFile(filepath.Join("..", "lease", "redislease", name))
		if err != nil {
			return nil, fmt.Errorf("bench: fencekit's scripts: %w", err)
		}
		return redis.NewScript(string(b)), nil
	}
	f := &FencekitLua{c: c}
	var err error
	if f.acquire, err = read("acquire.lua"); err != nil {
		return nil, err
	}
	if f.renew, err = read("renew.lua"); err != nil {
		return nil, err
	}
	if f.release, err = read("release.lua"); err != nil {
		return nil, err
	}
	return f, nil
}

func (*FencekitLua) Name() string     { return luaDiag }
func (*FencekitLua) AutoRenews() bool { return false }

func (f *FencekitLua) TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	owner := hex.EncodeToString(raw[:])
	p := "fencekit:{" + key + "}:"
	res, err := f.acquire.Run(ctx, f.c, []string{p + "lock", p + "token"}, ttl.Milliseconds(), owner).Result()
	if err != nil {
		return nil, err
	}
	// The token when granted, {pttl, holder} when held.
	tok, ok := res.(string)
	if !ok {
		if held, _ := res.([]any); len(held) == 2 {
			return nil, ErrHeld
		}
		return nil, fmt.Errorf("bench: acquire.lua replied %v", res)
	}
	return &luaHeld{f: f, lock: p + "lock", value: tok + ":" + owner}, nil
}

func (f *FencekitLua) AcquireWait(context.Context, string, time.Duration) (Held, error) {
	return nil, fmt.Errorf("bench: %s has no waiting acquire: %w", luaDiag, errors.ErrUnsupported)
}

type luaHeld struct {
	f           *FencekitLua
	lock, value string
}

func (h *luaHeld) Renew(ctx context.Context, ttl time.Duration) error {
	n, err := h.f.renew.Run(ctx, h.f.c, []string{h.lock}, h.value, ttl.Milliseconds()).Int()
	if err == nil && n != 1 {
		err = ErrHeld
	}
	return err
}

func (h *luaHeld) Release(ctx context.Context) error {
	n, err := h.f.release.Run(ctx, h.f.c, []string{h.lock}, h.value).Int()
	if err == nil && n != 1 {
		err = ErrHeld
	}
	return err
}
