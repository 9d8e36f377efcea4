package blobfence_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// fault says what the faulty client does with one conditional write.
type fault int

const (
	faultNone       fault = iota
	faultLostReply        // forward it (it lands), then report a transport error
	faultDropped          // report a transport error without forwarding it
	faultSDKRetry         // forward it twice, as a retrying SDK would, and report the second reply
	faultServer500        // forward it (it lands), then report a 500
	faultRefused500       // report a 500 without forwarding it
)

// faulty is a flaky S3 client: it forwards to the real one, runs hooks
// around conditional writes, injects faults, and records the SDK retryer's
// attempt limit that each operation was sent with.
type faulty struct {
	blobfence.S3API
	env *testenv.S3Env

	mu           sync.Mutex
	faults       []fault // consumed one per PutObject/DeleteObject
	beforePut    func()  // run before each forwarded PutObject
	afterPut     func()  // run once after a forwarded PutObject
	beforeDelete func()  // run once before DeleteObject
	sdkAttempts  map[string][]int
	forwarded    int                 // PutObject calls that reached the server
	tornMeta     []map[string]string // metadata to return instead, one per GetObject
	tornGets     []string            // ETags to return instead, one per GetObject
}

func newRacer(t *testing.T) *faulty {
	env := testenv.S3(t)
	f := &faulty{S3API: env.Client, env: env, sdkAttempts: map[string][]int{}}
	return f
}

// record notes the SDK attempt limit op was sent with.
func (f *faulty) record(op string, optFns []func(*s3.Options)) {
	o := s3.Options{Retryer: retry.NewStandard()}
	for _, fn := range optFns {
		fn(&o)
	}
	f.mu.Lock()
	f.sdkAttempts[op] = append(f.sdkAttempts[op], o.Retryer.MaxAttempts())
	f.mu.Unlock()
}

func (f *faulty) next() fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.faults) == 0 {
		return faultNone
	}
	x := f.faults[0]
	f.faults = f.faults[1:]
	return x
}

func take(mu *sync.Mutex, fn *func()) func() {
	mu.Lock()
	defer mu.Unlock()
	h := *fn
	*fn = nil
	return h
}

func transportError(op string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: op,
		Err: &smithyhttp.RequestSendError{Err: errors.New("read tcp: connection reset by peer")}}
}

func serverError(op string) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 500, Header: http.Header{}}}
	return &smithy.OperationError{ServiceID: "S3", OperationName: op,
		Err: &smithyhttp.ResponseError{Response: resp, Err: errors.New("InternalError")}}
}

func (f *faulty) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	f.record("HeadObject", o)
	return f.S3API.HeadObject(ctx, in, o...)
}

func (f *faulty) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.record("GetObject", o)
	out, err := f.S3API.GetObject(ctx, in, o...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && len(f.tornGets) > 0 {
		out.ETag, f.tornGets = aws.String(f.tornGets[0]), f.tornGets[1:]
	}
	if err == nil && len(f.tornMeta) > 0 {
		out.Metadata, f.tornMeta = f.tornMeta[0], f.tornMeta[1:]
	}
	return out, err
}

func (f *faulty) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.record("PutObject", o)
	f.mu.Lock()
	before := f.beforePut
	f.mu.Unlock()
	if before != nil {
		before()
	}
	mode := f.next()
	switch mode {
	case faultDropped:
		return nil, transportError("PutObject")
	case faultRefused500:
		return nil, serverError("PutObject")
	}
	f.mu.Lock()
	f.forwarded++
	f.mu.Unlock()
	out, err := f.S3API.PutObject(ctx, in, o...)
	if after := take(&f.mu, &f.afterPut); after != nil {
		after()
	}
	switch mode {
	case faultLostReply:
		return nil, transportError("PutObject")
	case faultServer500:
		return nil, serverError("PutObject")
	case faultSDKRetry:
		if _, serr := in.Body.(io.Seeker).Seek(0, io.SeekStart); serr != nil {
			return nil, serr
		}
		return f.S3API.PutObject(ctx, in, o...)
	}
	return out, err
}

func (f *faulty) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.record("DeleteObject", o)
	if before := take(&f.mu, &f.beforeDelete); before != nil {
		before()
	}
	mode := f.next()
	if mode == faultDropped {
		return nil, transportError("DeleteObject")
	}
	out, err := f.S3API.DeleteObject(ctx, in, o...)
	if mode == faultLostReply {
		return nil, transportError("DeleteObject")
	}
	return out, err
}

func TestLostReplyResolvedByRereading(t *testing.T) {
	for _, mode := range []struct {
		name  string
		fault fault
	}{{"transport error after landing", faultLostReply}, {"SDK retry after landing gets 412", faultSDKRetry}, {"500 after landing", faultServer500}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			f := newRacer(t)
			s := mustNew(t, f, f.env.Bucket, nil)
			first, err := s.PutReader(ctx, "k", strings.NewReader("old"), 4)
			if err != nil {
				t.Fatal(err)
			}
			f.faults = []fault{mode.fault}
			res, err := s.PutReader(ctx, "k", strings.NewReader("new"), 5)
			if err != nil {
				t.Fatalf("a put that landed was reported as %v", err)
			}
			if res.Token() != 5 || res.ETag() == first.ETag() {
				t.Fatalf("put returned %+v; want token 5 under a new ETag", res)
			}
			body, v, err := s.GetVersion(ctx, "k")
			if err != nil || string(body) != "new" || v != res {
				t.Fatalf("stored %q %+v %v; want \"new\" %+v", body, v, err, res)
			}
			if f.forwarded != 2 {
				t.Fatalf("%d PUTs reached the server, want 2 (the store must not write again once it sees its write)", f.forwarded)
			}
		})
	}
}

func TestDroppedWriteIsRetried(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	f.faults = []fault{faultDropped, faultDropped}
	err := s.Put(ctx, "k", []byte("body"), 3)
	if n := len(f.sdkAttempts["PutObject"]); err != nil || n != 3 {
		t.Fatalf("put after two dropped attempts: %v after %d PUTs; want success on attempt 3", err, n)
	}
	wantStored(t, s, "k", "body", 3)
}

// TestLostReplyThenSuperseded: the write lands but its reply is lost, and
// a newer holder overwrites it before the store re-reads. The store cannot
// know whether its write landed; it says so, and reports the stale verdict.
func TestLostReplyThenSuperseded(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	f.faults = []fault{faultLostReply}
	f.afterPut = func() {
		if err := mustNew(t, f.env.Client, f.env.Bucket, nil).Put(ctx, "k", []byte("newer"), 9); err != nil {
			t.Error(err)
		}
	}
	err := s.Put(ctx, "k", []byte("mine"), 5)
	if !errors.Is(err, fence.ErrStale) || !errors.Is(err, blobfence.ErrOutcomeUnknown) {
		t.Fatalf("err = %v; want ErrStale and ErrOutcomeUnknown", err)
	}
	wantStored(t, s, "k", "newer", 9)
}

func TestAllAttemptsUnanswered(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, &blobfence.Options{MaxAttempts: 2})
	f.faults = []fault{faultDropped, faultDropped}
	err := s.Put(ctx, "k", []byte("x"), 1)
	if !errors.Is(err, blobfence.ErrOutcomeUnknown) || errors.Is(err, blobfence.ErrContention) {
		t.Fatalf("err = %v; want ErrOutcomeUnknown, not ErrContention", err)
	}
	// The last attempt landed but its reply was lost: the read after the
	// bound finds it.
	f.faults = []fault{faultDropped, faultLostReply}
	gets := len(f.sdkAttempts["GetObject"])
	puts := len(f.sdkAttempts["PutObject"])
	err = s.Put(ctx, "k2", []byte("y"), 1)
	if err != nil || len(f.sdkAttempts["PutObject"])-puts != 2 || len(f.sdkAttempts["GetObject"])-gets != 3 {
		t.Fatalf("put whose last attempt landed unanswered: %v after %d PUTs, %d GETs; want success after 2 PUTs, 3 GETs",
			err, len(f.sdkAttempts["PutObject"])-puts, len(f.sdkAttempts["GetObject"])-gets)
	}
}

// TestCancelledDuringWrite: a context cancelled while the conditional PUT
// of a put or a delete's tombstone is in flight ends the call at once,
// without another attempt, and the error says both that the outcome is
// unknown and why.
func TestCancelledDuringWrite(t *testing.T) {
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.beforePut = cancel
	err := s.Put(ctx, "k", []byte("x"), 1)
	if !errors.Is(err, blobfence.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("put cancelled in flight: %v; want ErrOutcomeUnknown and context.Canceled", err)
	}
	if n := len(f.sdkAttempts["PutObject"]); n != 1 {
		t.Fatalf("%d PUTs; want 1 (no attempt after the cancellation)", n)
	}
	if err := s.Put(context.Background(), "k", []byte("x"), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	f.beforePut = cancel
	puts := len(f.sdkAttempts["PutObject"])
	err = s.Delete(ctx, "k", 1)
	if !errors.Is(err, blobfence.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || len(f.sdkAttempts["PutObject"])-puts != 1 {
		t.Fatalf("delete cancelled in flight: %v after %d PUTs; want ErrOutcomeUnknown and context.Canceled after 1",
			err, len(f.sdkAttempts["PutObject"])-puts)
	}
	if n := len(f.sdkAttempts["DeleteObject"]); n != 0 {
		t.Fatalf("a delete sent %d DELETEs; it writes a tombstone", n)
	}
}

func TestContentionExhausted(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, &blobfence.Options{MaxAttempts: 3})
	other := mustNew(t, f.env.Client, f.env.Bucket, nil)
	n := 0
	// Before each of our PUTs, the same holder (equal token) writes from
	// elsewhere: never stale, always a lost race.
	f.beforePut = func() {
		n++
		if err := other.Put(ctx, "k", []byte{byte(n)}, 7); err != nil {
			t.Error(err)
		}
	}
	err := s.Put(ctx, "k", []byte("mine"), 7)
	if !errors.Is(err, blobfence.ErrContention) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("err = %v; want ErrContention, not ErrStale", err)
	}
	if len(f.sdkAttempts["PutObject"]) != 3 || len(f.sdkAttempts["GetObject"]) != 4 {
		t.Fatalf("sent %d PUTs and %d GETs; want 3 and 4 (the read after the last lost race finds the same token: the race counts)",
			len(f.sdkAttempts["PutObject"]), len(f.sdkAttempts["GetObject"]))
	}
	if body, _ := mustGet(t, other, "k"); string(body) != "\x03" {
		t.Fatalf("stored %q, want the other writer's last body", body)
	}
}

func TestDeleteLostReply(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	if err := s.Put(ctx, "k", []byte("x"), 2); err != nil {
		t.Fatal(err)
	}
	f.faults = []fault{faultLostReply}
	if err := s.Delete(ctx, "k", 2); err != nil {
		t.Fatalf("a delete that landed was reported as %v", err)
	}
	if _, err := s.Head(ctx, "k"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Head after delete: %v", err)
	}
}

// TestRepeated5xxSaysServerError: a put whose every PUT got a 500 says
// the server answered with an error, not that nothing answered.
func TestRepeated5xxSaysServerError(t *testing.T) {
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, &blobfence.Options{MaxAttempts: 2})
	f.faults = []fault{faultRefused500, faultRefused500}
	err := s.Put(context.Background(), "k", []byte("x"), 1)
	if !errors.Is(err, blobfence.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "got a server error (500)") || strings.Contains(err.Error(), "no answer") {
		t.Fatalf("put whose PUTs got 500s: %v; want ErrOutcomeUnknown saying \"got a server error (500)\"", err)
	}
}

// answers500 is an S3 in memory whose PUTs all get a 500 and whose keys
// are all absent; it notes when each PUT came.
type answers500 struct {
	blobfence.S3API
	puts []time.Time
}

func (a *answers500) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 404, Header: http.Header{}}}
	return nil, &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &smithyhttp.ResponseError{Response: resp, Err: errors.New("NoSuchKey")}}
}

func (a *answers500) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	a.puts = append(a.puts, time.Now())
	return nil, serverError("PutObject")
}

// TestRetriesAfter5xxPause: after a write that got a 5xx, the store
// pauses before it reads and writes again, longer each time (in a
// synctest bubble: its clock moves only while every goroutine waits).
func TestRetriesAfter5xxPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &answers500{}
		s := mustNew(t, a, "b", nil)
		if err := s.Put(context.Background(), "k", []byte("x"), 1); !errors.Is(err, blobfence.ErrOutcomeUnknown) {
			t.Fatalf("put: %v; want ErrOutcomeUnknown", err)
		}
		if len(a.puts) != defaultAttempts {
			t.Fatalf("%d PUTs, want %d", len(a.puts), defaultAttempts)
		}
		var gaps []time.Duration
		for i := 1; i < len(a.puts); i++ {
			gaps = append(gaps, a.puts[i].Sub(a.puts[i-1]))
		}
		for i, g := range gaps {
			if g <= 0 || i > 0 && g < gaps[i-1] {
				t.Fatalf("pauses between the PUTs: %v; want each above 0 and none shorter than the one before", gaps)
			}
		}
		t.Logf("pauses between the PUTs: %v", gaps)
	})
}
