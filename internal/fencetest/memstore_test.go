package fencetest_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/valid"
)

func TestStore(t *testing.T) {
	s := fencetest.NewStore()
	if v, tok := s.Get("a"); v != nil || tok != 0 {
		t.Fatalf("empty Get = %q, %d", v, tok)
	}
	mustPut := func(res string, tok fence.Token, v string) {
		t.Helper()
		if err := s.Put(res, tok, []byte(v)); err != nil {
			t.Fatalf("Put(%s, %d) = %v", res, tok, err)
		}
	}
	mustPut("a", 33, "from A")
	mustPut("a", 33, "from A again")
	if err := s.Claim("a", 34); err != nil {
		t.Fatalf("Claim(34) = %v", err)
	}
	err := s.Put("a", 33, []byte("A after pause"))
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Presented != 33 || se.Current != 34 || se.Resource != "a" {
		t.Fatalf("stale Put = %v, want StaleError{a 33 34}", err)
	}
	if v, tok := s.Get("a"); string(v) != "from A again" || tok != 34 {
		t.Fatalf("after rejected write Get = %q, %d", v, tok)
	}
	if err := s.Claim("a", 33); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale Claim = %v", err)
	}
	mustPut("a", 34, "from B")
	mustPut("b", 1, "other resource")
	if got := s.Resources(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Resources = %v", got)
	}
	buf := []byte("mutable")
	mustPut("c", 1, string(buf))
	v, _ := s.Get("c")
	v[0] = 'X'
	if again, _ := s.Get("c"); string(again) != "mutable" {
		t.Fatalf("Get returned the store's own slice: %q", again)
	}
	if s.Current("a") != 34 || s.Current("zzz") != 0 {
		t.Fatalf("Current = %d, %d", s.Current("a"), s.Current("zzz"))
	}
}

// TestStoreConcurrent races writers with random tokens on a few resources
// and checks, over many seeds, that the accepted history of each resource is
// monotonic and that its final token is the largest that was accepted.
func TestStoreConcurrent(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		s := fencetest.NewStore()
		resources := []string{"r0", "r1", "r2"}
		var mu sync.Mutex
		accepted := map[string][]fence.Token{}
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for range 200 {
					res := resources[rng.IntN(len(resources))]
					tok := fence.Token(1 + rng.IntN(1000))
					// Hold mu across Put so the audit order is the store's order.
					mu.Lock()
					err := s.Put(res, tok, []byte(tok.String()))
					if err == nil {
						accepted[res] = append(accepted[res], tok)
					} else if !errors.Is(err, fence.ErrStale) {
						t.Errorf("Put: %v", err)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, res := range resources {
			h := accepted[res]
			if err := fencetest.VerifyHistory(res, h); err != nil {
				t.Fatalf("seed=%d: %v", seed, err)
			}
			v, cur := s.Get(res)
			if len(h) == 0 {
				continue
			}
			if want := slices.Max(h); cur != want || string(v) != want.String() {
				t.Fatalf("seed=%d %s: final %q token %d, want written by %d", seed, res, v, cur, want)
			}
		}
	}
}

// A zero token, a token above MaxToken or a bad resource is refused by
// Claim and Put with an error matching ErrInvalid that says "fencetest:" once,
// and the store is unchanged.
func TestStoreRefusesBadInput(t *testing.T) {
	s := fencetest.NewStore()
	if err := s.Put("r", 5, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource string
		tok      fence.Token
		mention  string
	}{
		{"r", 0, "token is zero"},
		{"r", valid.MaxToken + 1, "above the maximum"},
		{"", 6, "resource is empty"},
		{"a\x00b", 6, "control character"},
		{strings.Repeat("x", 16<<10), 6, "longer than 1024"},
	} {
		for op, err := range map[string]error{
			"Claim": s.Claim(tc.resource, tc.tok),
			"Put":   s.Put(tc.resource, tc.tok, []byte("new")),
		} {
			if !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.mention) ||
				strings.Count(err.Error(), "fencetest:") != 1 || len(err.Error()) > 200 {
				t.Errorf("%s(%.20q, %d) = %v; want ErrInvalid saying %q, \"fencetest:\" once", op, tc.resource, tc.tok, err, tc.mention)
			}
		}
	}
	if v, tok := s.Get("r"); string(v) != "kept" || tok != 5 {
		t.Errorf("after refused writes the store holds %q with token %d, want \"kept\" with 5", v, tok)
	}
	if got := s.Resources(); len(got) != 1 {
		t.Errorf("refused writes added resources: %d resources, want 1", len(got))
	}
}

func TestVerifyHistory(t *testing.T) {
	for _, h := range [][]fence.Token{nil, {5}, {1, 1, 2, 2, 9}, {0, 0, 3}} {
		if err := fencetest.VerifyHistory("r", h); err != nil {
			t.Errorf("VerifyHistory(%v) = %v, want nil", h, err)
		}
	}
	err := fencetest.VerifyHistory("r", []fence.Token{1, 4, 4, 3, 5})
	if err == nil {
		t.Fatal("VerifyHistory accepted 3 after 4")
	}
	for _, want := range []string{"write 3 accepted token 3", "write 1 accepted token 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
