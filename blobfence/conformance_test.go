package blobfence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
)

// TestConformsToMemStore applies one seeded sequence of puts (a few keys,
// tokens from a small range so that equal, older and newer tokens all occur)
// to fencetest.Store, the reference, and to a Store, and checks that every
// put gets the same verdict, every refusal names the same current token, and
// the stored bodies and tokens agree at the end.
func TestConformsToMemStore(t *testing.T) {
	store, _, _ := newStore(t, nil)
	ctx := context.Background()
	ref := fencetest.NewStore()
	keys := []string{"k0", "k1", "k2"}
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range 80 {
		key := keys[rng.IntN(len(keys))]
		tok := fence.Token(1 + rng.IntN(12))
		body := []byte(fmt.Sprintf("write %d", i))
		want := ref.Put(key, tok, body)
		got := store.Put(ctx, key, body, tok)
		if (want == nil) != (got == nil) {
			t.Fatalf("seed=%d put %d (%s, token %d): MemStore says %v, blobfence says %v", seed, i, key, tok, want, got)
		}
		var ws, gs *fence.StaleError
		if errors.As(want, &ws) && (!errors.As(got, &gs) || gs.Current != ws.Current || gs.Presented != ws.Presented) {
			t.Fatalf("seed=%d put %d: blobfence refusal %v, reference %v", seed, i, got, want)
		}
	}
	for _, key := range keys {
		wantBody, wantTok := ref.Get(key)
		if wantTok == 0 {
			continue
		}
		gotBody, gotTok, err := store.Get(ctx, key)
		if err != nil || string(gotBody) != string(wantBody) || gotTok != wantTok {
			t.Fatalf("seed=%d %s: blobfence has %q token %d (%v), reference %q token %d", seed, key, gotBody, gotTok, err, wantBody, wantTok)
		}
	}
}
