package blobfence_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/testenv"
)

var (
	raceSeed   = flag.Uint64("race-seed", 0, "seed of TestRacingWriters (0: from the clock)")
	raceRounds = flag.Int("race-rounds", 30, "rounds of TestRacingWriters (at most 20 under -short; the full run is 200)")
	sameRounds = flag.Int("same-rounds", 15, "rounds of TestRacingWritersIdenticalBytes (at most 10 under -short; make soak runs 200)")
)

type raceResult struct {
	writer int
	tok    fence.Token
	body   string
	err    error
}

// TestRacingWriters races 50 writers with random tokens on one key, for
// -race-rounds rounds, and audits every round against the order in which
// the server accepted the writes (a commitLog proxy): the tokens must pass
// fencetest.VerifyHistory, every accepted put must be in the log once, the
// final object must be the last one accepted, with the largest token, and
// every loser must have been told ErrStale (with a newer current token) or
// ErrContention. Every fifth writer passes After with the version of the
// round's first object, out of date by the time most of them write.
//
// The default of 30 rounds (20 under -short) keeps `make test` short;
// -race-rounds=200 is the full run. The seed comes from the clock,
// so every run draws new tokens.
func TestRacingWriters(t *testing.T) {
	const writers = 50
	rounds := *raceRounds
	if testing.Short() {
		rounds = min(rounds, 20)
	}
	seed := *raceSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed=%d (rerun with -race-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	env := testenv.S3(t)
	log := newCommitLog()
	s := mustNew(t, log.proxy().client(t, env), env.Bucket, nil)
	var accepted, stale, contention int
	for round := range rounds {
		key := fmt.Sprintf("race-%03d", round)
		first, err := s.PutReader(context.Background(), key, strings.NewReader("first"), 1)
		if err != nil {
			t.Fatal(err)
		}
		toks := make([]fence.Token, writers)
		for i := range toks {
			toks[i] = fence.Token(1 + rng.IntN(40)) // small range: ties happen
		}
		results := raceRound(s, key, round, toks, first)
		a, st, c := auditRound(t, s, key, results, log.accepted("/" + env.Bucket + "/" + key)[1:])
		if t.Failed() {
			t.Fatalf("failed in round %d for seed=%d", round, seed)
		}
		accepted, stale, contention = accepted+a, stale+st, contention+c
	}
	t.Logf("%d rounds x %d writers: %d accepted, %d stale, %d lost every race", rounds, writers, accepted, stale, contention)
	if stale == 0 {
		t.Errorf("no write was ever rejected as stale; the race did not exercise fencing")
	}
}

func raceRound(s *blobfence.Store, key string, round int, toks []fence.Token, first blobfence.Version) []raceResult {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := make([]raceResult, len(toks))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, tok := range toks {
		wg.Go(func() {
			body := fmt.Sprintf("round %d writer %d token %d", round, i, tok)
			var opts []blobfence.PutOption
			if i%5 == 1 {
				opts = append(opts, blobfence.After(first))
			}
			<-start
			err := s.Put(ctx, key, []byte(body), tok, opts...)
			results[i] = raceResult{writer: i, tok: tok, body: body, err: err}
		})
	}
	close(start)
	wg.Wait()
	return results
}

// auditRound checks one round's results against the tokens the server
// accepted, in order, and returns the counts of accepted, stale and
// contention outcomes.
func auditRound(t *testing.T, s *blobfence.Store, key string, results []raceResult, log []fence.Token) (accepted, stale, contention int) {
	t.Helper()
	var want []fence.Token
	bodies := map[string]fence.Token{}
	for _, r := range results {
		var se *fence.StaleError
		switch {
		case r.err == nil:
			accepted++
			want = append(want, r.tok)
			bodies[r.body] = r.tok
		case errors.As(r.err, &se):
			stale++
			if se.Presented != r.tok || se.Current <= r.tok {
				t.Errorf("writer %d (token %d): stale error %+v does not name a newer token", r.writer, r.tok, *se)
			}
		case errors.Is(r.err, blobfence.ErrContention):
			contention++
		default:
			t.Errorf("writer %d (token %d): unexpected error %v", r.writer, r.tok, r.err)
		}
		if r.err != nil && errors.Is(r.err, blobfence.ErrOutcomeUnknown) {
			t.Errorf("writer %d: outcome unknown with no fault injected: %v", r.writer, r.err)
		}
	}
	if err := fencetest.VerifyHistory(key, log); err != nil {
		t.Errorf("the server accepted tokens %v in that order: %v", log, err)
	}
	slices.Sort(want)
	if sorted := slices.Sorted(slices.Values(log)); !slices.Equal(sorted, want) {
		t.Errorf("the server accepted tokens %v; the accepted puts had %v", sorted, want)
	}
	body, tok, err := s.Get(context.Background(), key)
	if err != nil || len(log) == 0 || tok != log[len(log)-1] || tok != slices.Max(log) || bodies[string(body)] != tok {
		t.Errorf("final object %q token %d, %v; want the last accepted write, with the largest token, of %v", body, tok, err, log)
	}
	return accepted, stale, contention
}

// TestRacingDeletes races deletes against puts on one key, all with
// tokens of at least the stored one, so that the deletes pass their check
// and really write their tombstones: the order in which the server
// accepted the writes (a commitLog proxy) must pass fencetest.VerifyHistory,
// some deletes must have been accepted, and the key must read as the last
// accepted write left it.
func TestRacingDeletes(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	log := newCommitLog()
	s := mustNew(t, log.proxy().client(t, env), env.Bucket, nil)
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	deletes := 0
	for round := range rounds {
		key := fmt.Sprintf("del-%02d", round)
		if err := s.Put(ctx, key, []byte("base"), 50); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range 20 {
			wg.Go(func() {
				if i%2 == 0 {
					errs[i] = s.Delete(ctx, key, fence.Token(50+i))
				} else {
					errs[i] = s.Put(ctx, key, []byte(fmt.Sprint("put ", i)), fence.Token(50+i))
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, fence.ErrStale) && !errors.Is(err, blobfence.ErrContention) {
				t.Errorf("round %d: writer %d: %v; want nil, ErrStale or ErrContention", round, i, err)
			}
		}
		writes := log.log("/" + env.Bucket + "/" + key)
		if err := fencetest.VerifyHistory(key, log.accepted("/"+env.Bucket+"/"+key)); err != nil {
			t.Errorf("round %d: %v", round, err)
		}
		last := writes[len(writes)-1]
		for _, w := range writes[1:] {
			if w.deleted {
				deletes++
			}
		}
		body, tok, err := s.Get(ctx, key)
		switch {
		case last.deleted && !errors.Is(err, blobfence.ErrNotFound):
			t.Errorf("round %d: the last accepted write was token %d's delete, but Get returns %q, %d, %v", round, last.tok, body, tok, err)
		case !last.deleted && (err != nil || tok != last.tok || string(body) != fmt.Sprint("put ", last.tok-50)):
			t.Errorf("round %d: the last accepted write was token %d's put, but Get returns %q, %d, %v", round, last.tok, body, tok, err)
		}
	}
	if deletes == 0 {
		t.Error("no delete was ever accepted; the race did not exercise deletes")
	}
	t.Logf("%d rounds: %d deletes accepted", rounds, deletes)
}

// pausing is an S3 client that sleeps a random time, up to max, before
// every PUT, that is between a writer's read and its write: the window in
// which a paused holder's read goes stale.
type pausing struct {
	blobfence.S3API
	max time.Duration
}

func (p pausing) pause() { time.Sleep(rand.N(p.max)) }

func (p pausing) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	p.pause()
	return p.S3API.PutObject(ctx, in, o...)
}

// TestRacingWritersIdenticalBytes races 50 writers with random tokens that
// all write the same bytes, pausing a random 0-10 ms between their read
// and their write, for -same-rounds rounds. An ETag that is the MD5 of the
// bytes would stay the same across writes, and a paused writer's If-Match
// would pass over a newer token; the envelope makes every write change the
// ETag, and no put is refused for writing the same bytes. A proxy records the order in which the server accepted the writes
// (commitLog), and every round must pass fencetest.VerifyHistory on it: 0
// violations. Every accepted put must be in the log once, and the final
// object must carry the largest accepted token.
func TestRacingWritersIdenticalBytes(t *testing.T) {
	const writers = 50
	rounds := *sameRounds
	if testing.Short() {
		rounds = min(rounds, 10)
	}
	seed := *raceSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed=%d (the pauses are not replayed by the seed)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	env := testenv.S3(t)
	log := newCommitLog()
	s := mustNew(t, pausing{S3API: log.proxy().client(t, env), max: 10 * time.Millisecond}, env.Bucket, nil)
	body := []byte("the same bytes from every writer")
	var accepted, stale, contention, violations int
	for round := range rounds {
		key := fmt.Sprintf("same-%03d", round)
		toks := make([]fence.Token, writers)
		for i := range toks {
			toks[i] = fence.Token(1 + rng.IntN(40))
		}
		results := make([]raceResult, writers)
		var wg sync.WaitGroup
		for i, tok := range toks {
			wg.Go(func() {
				err := s.Put(context.Background(), key, body, tok)
				results[i] = raceResult{writer: i, tok: tok, err: err}
			})
		}
		wg.Wait()
		var want []fence.Token
		for _, r := range results {
			var se *fence.StaleError
			switch {
			case r.err == nil:
				accepted++
				want = append(want, r.tok)
			case errors.As(r.err, &se):
				stale++
			case errors.Is(r.err, blobfence.ErrContention):
				contention++
			default:
				t.Errorf("round %d writer %d (token %d): %v", round, r.writer, r.tok, r.err)
			}
		}
		got := log.accepted("/" + env.Bucket + "/" + key)
		if err := fencetest.VerifyHistory(key, got); err != nil {
			violations++
			t.Errorf("round %d: the server accepted tokens %v in that order: %v", round, got, err)
		}
		slices.Sort(want)
		if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, want) {
			t.Errorf("round %d: the server accepted tokens %v; the accepted puts had %v", round, sorted, want)
		}
		if _, tok, err := s.Get(context.Background(), key); err != nil || len(got) == 0 || tok != slices.Max(got) {
			t.Errorf("round %d: final token %d, %v; want the largest accepted, of %v", round, tok, err, got)
		}
		if t.Failed() {
			t.Fatalf("failed in round %d for seed=%d", round, seed)
		}
	}
	t.Logf("%d rounds x %d writers of identical bytes: %d written, %d stale, %d lost every race; %d violations",
		rounds, writers, accepted, stale, contention, violations)
}

// TestNewHolderNotStarvedByOldHolder: an old holder (token 1, version
// cache on) keeps putting a key in a tight loop, one request a put, while
// the new holder (token 2) puts it once: the new holder's read and PUT
// leave a window the old holder's PUTs keep landing in. Races lost to an
// older token do not use up MaxAttempts (here 1, so that each lost race
// would end the call), so the new holder's Put lands; the old holder is
// then refused.
func TestNewHolderNotStarvedByOldHolder(t *testing.T) {
	ctx := context.Background()
	_, _, env := newStore(t, nil)
	const rounds = 20
	failed, lost, most := 0, 0, 0
	for r := range rounds {
		key := fmt.Sprintf("k%d", r)
		c := &counting{S3API: env.Client}
		old := mustNew(t, env.Client, env.Bucket, nil)
		holder := mustNew(t, c, env.Bucket, &blobfence.Options{MaxAttempts: 1})
		if err := old.Put(ctx, key, []byte("old"), 1); err != nil {
			t.Fatal(err)
		}
		stop, done := make(chan struct{}), make(chan error)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				if err := old.Put(ctx, key, []byte(fmt.Sprint(i)), 1); err != nil {
					if !errors.Is(err, fence.ErrFencedOut) {
						done <- err
						return
					}
					<-stop
					done <- nil
					return
				}
			}
		}()
		err := holder.Put(ctx, key, []byte("new"), 2)
		close(stop)
		if oerr := <-done; oerr != nil {
			t.Fatalf("old holder: %v", oerr)
		}
		if err != nil {
			if !errors.Is(err, blobfence.ErrContention) {
				t.Fatalf("round %d: new holder: %v", r, err)
			}
			failed++
			continue
		}
		lost += int(c.puts.Load()) - 1
		most = max(most, int(c.puts.Load())-1)
		wantStored(t, holder, key, "new", 2)
	}
	t.Logf("new holder's Put: ErrContention in %d of %d rounds; %d races lost to the old holder in the others, at most %d in one", failed, rounds, lost, most)
	if failed > 1 {
		t.Errorf("the new holder's Put lost to the old holder's loop in %d of %d rounds (ErrContention); want at most 1", failed, rounds)
	}
}
