package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// porcupine lives in this nested module so that blobfence's users do not
// inherit it.

var linearizeRounds = flag.Int("s3-linearize-rounds", 5, "rounds of TestS3Linearizable (make soak runs 100)")

// regInput is one call on a fenced register: a put, a delete or a claim
// with a token, or a get.
type regInput struct {
	op   string // "put", "delete", "claim", "get"
	tok  fence.Token
	body string
}

// regOutput is what the call returned.
type regOutput struct {
	err   string // "", "stale", "contention"
	found bool   // get
	body  string // get
	tok   fence.Token
}

// regState is the fenced register: the largest accepted token, and whether
// readers see a body.
type regState struct {
	tok     fence.Token
	present bool
	body    string
}

// fencedRegister is the sequential specification blobfence must be
// linearizable to: a write (put, delete, claim) lands, or is refused as
// stale exactly when the register holds a newer token; ErrContention
// means it did not land.
var fencedRegister = porcupine.Model{
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(regState), input.(regInput), output.(regOutput)
		if in.op == "get" {
			ok := out.found == st.present && (!out.found || out.body == st.body && out.tok == st.tok)
			return ok, st
		}
		switch out.err {
		case "stale":
			return st.tok > in.tok, st
		case "contention":
			return true, st
		}
		if in.tok < st.tok {
			return false, st
		}
		switch in.op {
		case "put":
			return true, regState{tok: in.tok, present: true, body: in.body}
		case "delete":
			return true, regState{tok: in.tok}
		default: // claim
			return true, regState{tok: in.tok, present: st.present, body: st.body}
		}
	},
	DescribeOperation: func(input, output any) string { return fmt.Sprintf("%+v -> %+v", input, output) },
}

// TestS3Linearizable races 8 clients, each doing 4 random calls (put,
// delete, claim with a random token of 1-6, or get) on one key of
// the S3 server testenv starts (FENCEKIT_S3_SERVER: versitygw or
// SeaweedFS), for -s3-linearize-rounds rounds, records each call's
// interval and result, and checks every round's history with porcupine
// against fencedRegister.
func TestS3Linearizable(t *testing.T) {
	env := testenv.S3(t)
	store, err := blobfence.New(env.Client, env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ops := 0
	for round := range *linearizeRounds {
		key := fmt.Sprintf("linearize-%03d", round)
		plans := make([][]regInput, 8)
		for c := range plans {
			for range 4 {
				in := regInput{op: []string{"put", "put", "delete", "claim", "get"}[rng.IntN(5)], tok: fence.Token(1 + rng.IntN(6))}
				if in.op == "get" {
					in.tok = 0
				}
				if in.op == "put" {
					in.body = []string{"A", "B"}[rng.IntN(2)] // contents come back
				}
				plans[c] = append(plans[c], in)
			}
		}
		history := raceHistory(t, store, key, plans)
		ops += len(history)
		if res := porcupine.CheckOperationsTimeout(fencedRegister, history, time.Minute); res != porcupine.Ok {
			t.Fatalf("round %d (seed=%d): the history is %s for a fenced register:\n%v", round, seed, res, history)
		}
	}
	t.Logf("%d rounds, %d calls: linearizable", *linearizeRounds, ops)
}

// raceHistory runs each client's plan on key at once and returns the
// calls with their intervals.
func raceHistory(t *testing.T, store *blobfence.Store, key string, plans [][]regInput) []porcupine.Operation {
	ctx := context.Background()
	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for c, plan := range plans {
		wg.Go(func() {
			for _, in := range plan {
				call := time.Since(start).Nanoseconds()
				var out regOutput
				var err error
				switch in.op {
				case "put":
					err = store.Put(ctx, key, []byte(in.body), in.tok)
				case "delete":
					err = store.Delete(ctx, key, in.tok)
				case "claim":
					err = store.Claim(ctx, key, in.tok)
				default:
					var body []byte
					body, out.tok, err = store.Get(ctx, key)
					out.found, out.body = err == nil, string(body)
					if errors.Is(err, blobfence.ErrNotFound) {
						err = nil
					}
				}
				switch {
				case errors.Is(err, fence.ErrStale):
					out.err = "stale"
				case errors.Is(err, blobfence.ErrContention):
					out.err = "contention"
				case err != nil:
					t.Errorf("client %d: %+v: %v", c, in, err)
				}
				ret := time.Since(start).Nanoseconds()
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return history
}

// TestFencedRegisterModel: the model refuses the histories fencing
// forbids, so that the check above can fail: a stale put accepted after
// a newer one returned, and a get of a body a delete removed.
func TestFencedRegisterModel(t *testing.T) {
	op := func(c int, in regInput, out regOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret}
	}
	for name, h := range map[string][]porcupine.Operation{
		"stale put accepted": {
			op(0, regInput{op: "put", tok: 9, body: "B"}, regOutput{}, 0, 10),
			op(1, regInput{op: "put", tok: 5, body: "A"}, regOutput{}, 20, 30),
		},
		"put refused as stale with nothing newer": {
			op(0, regInput{op: "put", tok: 5, body: "A"}, regOutput{err: "stale"}, 0, 10),
		},
		"deleted body read": {
			op(0, regInput{op: "put", tok: 5, body: "A"}, regOutput{}, 0, 10),
			op(0, regInput{op: "delete", tok: 5}, regOutput{}, 20, 30),
			op(1, regInput{op: "get"}, regOutput{found: true, body: "A", tok: 5}, 40, 50),
		},
	} {
		if porcupine.CheckOperations(fencedRegister, h) {
			t.Errorf("%s: the model accepts the history", name)
		}
	}
	ok := []porcupine.Operation{
		op(0, regInput{op: "put", tok: 9, body: "B"}, regOutput{}, 0, 10),
		op(1, regInput{op: "put", tok: 5, body: "A"}, regOutput{err: "stale"}, 5, 30),
		op(1, regInput{op: "claim", tok: 12}, regOutput{}, 40, 50),
		op(0, regInput{op: "get"}, regOutput{found: true, body: "B", tok: 12}, 60, 70),
	}
	if !porcupine.CheckOperations(fencedRegister, ok) {
		t.Error("the model refuses a fenced history")
	}
}
