package blobfence_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/valid"
)

// The model check: every interleaving of the requests of three writers
// (token 12, and the stale 9 and 5), each doing one operation on one key
// (a put of A, a put of B, a delete; the token-5 writer may also put with
// After its own earlier version, and the token-9 writer claim), against an
// in-memory S3 whose ETags are derived from the stored bytes. The real
// Store runs against it: every request it sends parks its goroutine until
// the scheduler lets it through, and a depth-first search over the
// scheduler's choices runs every schedule once. The invariant is fencing's
// own: the tokens of the writes the model applied, in order, pass
// fencetest.VerifyHistory. Models of the record-only protocol (the ETag
// of the body, DELETE's If-Match) and of the metadata-token protocol (the token read from
// metadata) run the same way must break it.

// modelMode is how the in-memory S3 behaves.
type modelMode struct {
	checksumETags bool // ETags are a SHA-256 of the bytes, not their MD5
	torn          bool // a HEAD or GET reads metadata and bytes, then the ETag, in two steps, as versitygw's posix backend does
	split         bool // a PUT writes the ETag and bytes, then the metadata, in two steps, as versitygw --sidecar does
	// deletes: how DELETE treats If-Match: checked with the removal
	// (deleteAtomic, AWS), checked in one step and removed in the next
	// (deleteLate, versitygw v1.8.0), or ignored (deleteIgnored).
	deletes string
}

const (
	deleteAtomic  = "atomic"
	deleteLate    = "late"
	deleteIgnored = "ignored"
)

func (m modelMode) String() string {
	return fmt.Sprintf("checksum-etags=%v torn=%v split=%v delete-condition=%s", m.checksumETags, m.torn, m.split, m.deletes)
}

type modelObject struct {
	data []byte
	md   map[string]string
	etag string
}

// modelS3 is the in-memory S3: one bucket, conditional PUT, and a log of
// the writes it applied.
type modelS3 struct {
	mode  modelMode
	sched *scheduler
	mu    sync.Mutex
	objs  map[string]modelObject
	log   []fence.Token // the token of every applied write (a DELETE's is its sender's)
	trace []string
}

func (m *modelS3) etag(data []byte, form string) string {
	if m.mode.checksumETags {
		sum := sha256.Sum256(data)
		return `"` + hex.EncodeToString(sum[:16]) + "-c" + form + `"`
	}
	sum := md5.Sum(data)
	if form == "mpu" { // the ETag of a one-part multipart upload
		m := md5.Sum(sum[:])
		return `"` + hex.EncodeToString(m[:]) + `-1"`
	}
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// httpStatus is the status of a model error, 0 for none.
func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// modelClient is one writer's client of the model.
type modelClient struct {
	m   *modelS3
	w   int
	tok fence.Token
}

var _ blobfence.S3API = modelClient{}

func (c modelClient) object(key string) (modelObject, bool) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	o, ok := c.m.objs[key]
	return o, ok
}

func (c modelClient) note(format string, args ...any) {
	c.m.mu.Lock()
	c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) ", c.w, c.tok)+fmt.Sprintf(format, args...))
	c.m.mu.Unlock()
}

func modelError(status int) error {
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
		Err: fmt.Errorf("model: %d", status)}
}

// read is one read of key's metadata and ETag: in one step, or, torn, the
// metadata at one step and the ETag at the next.
func (c modelClient) read(key string) (modelObject, bool) {
	c.m.sched.step(c.w, false)
	o, ok := c.object(key)
	if c.m.mode.torn && ok {
		c.m.sched.step(c.w, false)
		if later, ok2 := c.object(key); ok2 {
			o.etag = later.etag
		}
	}
	return o, ok
}

func (c modelClient) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	o, ok := c.read(aws.ToString(in.Key))
	if !ok {
		c.note("HEAD: absent")
		return nil, modelError(404)
	}
	c.note("HEAD: token %s etag %s", o.md[tokenMetadata], o.etag)
	return &s3.HeadObjectOutput{ETag: aws.String(o.etag), Metadata: copyMD(o.md)}, nil
}

func (c modelClient) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	o, ok := c.read(aws.ToString(in.Key))
	switch {
	case !ok:
		return nil, modelError(404)
	case in.IfMatch != nil && aws.ToString(in.IfMatch) != o.etag:
		return nil, modelError(412)
	}
	c.note("GET: etag %s", o.etag)
	return &s3.GetObjectOutput{ETag: aws.String(o.etag), Metadata: copyMD(o.md), Body: io.NopCloser(bytes.NewReader(o.data))}, nil
}

func (c modelClient) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	data, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	key := aws.ToString(in.Key)
	c.m.sched.step(c.w, true)
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	cur, exists := c.m.objs[key]
	switch {
	case in.IfNoneMatch != nil && exists, in.IfMatch != nil && exists && aws.ToString(in.IfMatch) != cur.etag:
		c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) PUT: 412", c.w, c.tok))
		return nil, modelError(412)
	case in.IfMatch != nil && !exists:
		c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) PUT: 404", c.w, c.tok))
		return nil, modelError(404)
	}
	md := copyMD(in.Metadata)
	form := md["model-form"]
	delete(md, "model-form")
	o := modelObject{data: data, md: md, etag: c.m.etag(data, form)}
	if c.m.mode.split && exists { // the old metadata stays until the next step
		o.md = cur.md
	}
	c.m.objs[key] = o
	tok, _ := valid.ParseToken(md[tokenMetadata])
	c.m.log = append(c.m.log, tok)
	c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) PUT: applied, etag %s", c.w, c.tok, o.etag))
	if c.m.mode.split && exists {
		c.m.mu.Unlock()
		c.m.sched.step(c.w, true)
		c.m.mu.Lock()
		if later, ok := c.m.objs[key]; ok && later.etag == o.etag {
			later.md = md
			c.m.objs[key] = later
		}
		c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) PUT: metadata written", c.w, c.tok))
	}
	return &s3.PutObjectOutput{ETag: aws.String(o.etag)}, nil
}

// editMetadata is an operator's metadata-only edit (CopyObject of the key
// onto itself with MetadataDirective REPLACE): the bytes and ETag stay,
// the user metadata is gone. It is no write of a token: nothing is logged.
func (c modelClient) editMetadata(key string) {
	c.m.sched.step(c.w, true)
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if o, ok := c.m.objs[key]; ok {
		o.md = map[string]string{}
		c.m.objs[key] = o
		c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) COPY REPLACE: metadata dropped", c.w, c.tok))
	}
}

// DeleteObject treats If-Match as the mode says.
func (c modelClient) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	key := aws.ToString(in.Key)
	cond := in.IfMatch != nil && c.m.mode.deletes != deleteIgnored
	late := cond && c.m.mode.deletes == deleteLate
	c.m.sched.step(c.w, !late)
	c.m.mu.Lock()
	o, ok := c.m.objs[key]
	c.m.mu.Unlock()
	if cond && (!ok || o.etag != aws.ToString(in.IfMatch)) {
		c.note("DELETE: 412")
		return nil, modelError(412)
	}
	if late {
		c.m.sched.step(c.w, true)
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	delete(c.m.objs, key)
	c.m.log = append(c.m.log, c.tok)
	c.m.trace = append(c.m.trace, fmt.Sprintf("w%d(%d) DELETE: applied", c.w, c.tok))
	return &s3.DeleteObjectOutput{}, nil
}

func copyMD(md map[string]string) map[string]string {
	out := make(map[string]string, len(md))
	maps.Copy(out, md)
	return out
}

// scheduler runs one schedule: it lets one parked writer through at a
// time, following choices, and records how many writers it could choose
// from at each step, for the search to go on from. Two reads commute, so
// it prunes with sleep sets: after a schedule where writer p read before
// writer q read, it does not also try q's read before p's unless a write
// came between them.
type scheduler struct {
	choices []int
	widths  []int
	mu      sync.Mutex
	parked  map[int]parkedStep
	events  chan int
}

type parkedStep struct {
	release chan struct{}
	write   bool // the step changes the object (PUT, DELETE); else it reads
}

const writerDone = -1

// step parks writer w until the scheduler lets its next request through.
func (s *scheduler) step(w int, write bool) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.parked[w] = parkedStep{ch, write}
	s.mu.Unlock()
	s.events <- w
	<-ch
}

// run starts the writers and lets them through one step at a time.
func (s *scheduler) run(writers []func()) {
	s.parked, s.events, s.widths = map[int]parkedStep{}, make(chan int), nil
	for _, w := range writers {
		go func() {
			w()
			s.events <- writerDone
		}()
	}
	for range writers {
		<-s.events
	}
	sleep := map[int]bool{}
	for depth := 0; ; depth++ {
		s.mu.Lock()
		parked := maps.Clone(s.parked)
		s.mu.Unlock()
		if len(parked) == 0 {
			return
		}
		enabled := slices.Sorted(maps.Keys(parked))
		awake := slices.DeleteFunc(slices.Clone(enabled), func(w int) bool { return sleep[w] })
		if len(awake) == 0 { // every order from here was tried already
			awake, sleep = enabled[:1], map[int]bool{}
		}
		if depth == len(s.choices) {
			s.choices = append(s.choices, 0)
		}
		c := s.choices[depth]
		s.widths = append(s.widths, len(awake))
		p := awake[c]
		next := map[int]bool{}
		for _, q := range append(slices.Collect(maps.Keys(sleep)), awake[:c]...) {
			if q != p && !parked[q].write && !parked[p].write {
				next[q] = true
			}
		}
		sleep = next
		s.mu.Lock()
		delete(s.parked, p)
		s.mu.Unlock()
		close(parked[p].release)
		<-s.events // the writer parked again, or finished
	}
}

// next moves the choices to the next schedule of a depth-first search; it
// returns false when every schedule has run.
func (s *scheduler) next() bool {
	for i := len(s.widths) - 1; i >= 0; i-- {
		if s.choices[i]+1 < s.widths[i] {
			s.choices = append(s.choices[:i], s.choices[i]+1)
			return true
		}
	}
	return false
}

// modelOp is one writer's operation, through the real Store or the model
// of the record-only protocol.
type modelOp struct {
	name string
	run  func(ctx context.Context, c modelClient, prev blobfence.Version) error
}

const modelKey = "k"

func newModelStore(c modelClient) *blobfence.Store {
	s, err := blobfence.New(c, "model", nil)
	if err != nil {
		panic(err)
	}
	return s
}

var storeOps = map[string]modelOp{
	"put A": {"put A", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		return newModelStore(c).Put(ctx, modelKey, []byte("A"), c.tok)
	}},
	"put B": {"put B", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		return newModelStore(c).Put(ctx, modelKey, []byte("B"), c.tok)
	}},
	"delete": {"delete", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		return newModelStore(c).Delete(ctx, modelKey, c.tok)
	}},
	"claim": {"claim", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		return newModelStore(c).Claim(ctx, modelKey, c.tok)
	}},
	"put B after own version": {"put B after own version", func(ctx context.Context, c modelClient, prev blobfence.Version) error {
		return newModelStore(c).Put(ctx, modelKey, []byte("B"), c.tok, blobfence.After(prev))
	}},
	"get, put B": {"get, put B", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		s := newModelStore(c)
		if _, _, err := s.Get(ctx, modelKey); err != nil && !errors.Is(err, blobfence.ErrNotFound) {
			return err
		}
		return s.Put(ctx, modelKey, []byte("B"), c.tok) // from the version the Get remembered
	}},
	"put A, edit metadata": {"put A, edit metadata", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		err := newModelStore(c).Put(ctx, modelKey, []byte("A"), c.tok)
		c.editMetadata(modelKey)
		return err
	}},
}

// modelRun is the outcome of one program over every schedule.
type modelRun struct {
	schedules, violations int
	example               []string // the trace of the first violation
}

// explore runs the program (the initial state, then one operation per
// writer) over every schedule against a model in mode.
func explore(t *testing.T, mode modelMode, initial func(ctx context.Context, c modelClient) (blobfence.Version, error), ops [3]modelOp) modelRun {
	toks := [3]fence.Token{12, 9, 5}
	sched := &scheduler{}
	var r modelRun
	// The initial state is written once, by the token-5 writer, unscheduled.
	var prev blobfence.Version
	start := map[string]modelObject{}
	if initial != nil {
		setup := modelClient{m: &modelS3{mode: mode, objs: start, sched: &scheduler{parked: map[int]parkedStep{}, events: make(chan int)}}, w: 2, tok: 5}
		done := make(chan error)
		go func() {
			var err error
			prev, err = initial(context.Background(), setup)
			done <- err
		}()
		if err := runAlone(setup.m.sched, done); err != nil {
			t.Fatalf("initial state: %v", err)
		}
	}
	for {
		m := &modelS3{mode: mode, sched: sched, objs: maps.Clone(start)}
		ctx := context.Background()
		writers := make([]func(), 3)
		for i := range writers {
			c := modelClient{m: m, w: i, tok: toks[i]}
			writers[i] = func() {
				if err := ops[i].run(ctx, c, prev); err != nil {
					c.note("%s: %v", ops[i].name, shortErr(err))
				} else {
					c.note("%s: ok", ops[i].name)
				}
			}
		}
		sched.run(writers)
		r.schedules++
		if err := fencetest.VerifyHistory(modelKey, m.log); err != nil {
			r.violations++
			if r.example == nil {
				r.example = append([]string{fmt.Sprintf("%s; ops %s, %s, %s; applied tokens %v", mode, ops[0].name, ops[1].name, ops[2].name, m.log)}, m.trace...)
			}
		}
		if !sched.next() {
			return r
		}
	}
}

// runAlone lets one writer through every step until it is done.
func runAlone(s *scheduler, done <-chan error) error {
	for {
		select {
		case err := <-done:
			return err
		case w := <-s.events:
			s.mu.Lock()
			p := s.parked[w]
			delete(s.parked, w)
			s.mu.Unlock()
			close(p.release)
		}
	}
}

func shortErr(err error) string {
	switch {
	case errors.Is(err, fence.ErrStale):
		return "stale"
	case errors.Is(err, blobfence.ErrContention):
		return "contention"
	}
	return err.Error()
}

var modelModes = func() []modelMode {
	var modes []modelMode
	for _, checksum := range []bool{false, true} {
		for _, torn := range []bool{false, true} {
			if checksum && torn {
				continue // a server whose ETags are not the MD5 is trusted to return the ETag and bytes of one version
			}
			for _, split := range []bool{false, true} {
				if torn && split {
					continue // each is checked alone: together they are too many schedules to run
				}
				for _, deletes := range []string{deleteAtomic, deleteLate, deleteIgnored} {
					modes = append(modes, modelMode{checksumETags: checksum, torn: torn, split: split, deletes: deletes})
				}
			}
		}
	}
	return modes
}()

// checkModel explores every program of ops over every mode and returns
// the totals.
func checkModel(t *testing.T, modes []modelMode, ops map[string]modelOp, initials map[string]func(context.Context, modelClient) (blobfence.Version, error),
	newest, stale9, stale5 []string) modelRun {
	var total modelRun
	for _, mode := range modes {
		for _, init := range slices.Sorted(maps.Keys(initials)) {
			for _, a := range newest {
				for _, b := range stale9 {
					for _, c := range stale5 {
						if c == "put B after own version" && init == "absent" {
							continue // no own version to put after
						}
						r := explore(t, mode, initials[init], [3]modelOp{ops[a], ops[b], ops[c]})
						total.schedules += r.schedules
						total.violations += r.violations
						if total.example == nil && r.example != nil {
							total.example = append([]string{"initial: " + init}, r.example...)
						}
					}
				}
			}
		}
	}
	return total
}

var modelFull = flag.Bool("model-full", false, "TestModelCheck: every server model and every operation (make soak; minutes under -race)")

// TestModelCheck: the Store's protocol breaks fencing in no schedule. By
// default on two server models with MD5 ETags and a DELETE condition
// checked late: one with torn reads, one whose PUT writes the metadata a
// step after the ETag and bytes; and the operations each hole of the
// earlier releases needs, an operator's metadata edit included.
// -model-full runs all fifteen models and every operation for every
// writer.
func TestModelCheck(t *testing.T) {
	modes := []modelMode{{torn: true, deletes: deleteLate}}
	newest := []string{"put A", "put B", "delete", "put A, edit metadata"}
	stale9 := []string{"put B", "delete", "claim"}
	stale5 := []string{"put A", "put B", "delete", "put B after own version", "get, put B"}
	if *modelFull {
		modes = modelModes
		stale9 = []string{"put A", "put B", "delete", "claim"}
		stale5 = []string{"put A", "put B", "delete", "claim", "put B after own version", "get, put B"}
	}
	r := checkModel(t, modes, storeOps, modelInitials, newest, stale9, stale5)
	if !*modelFull { // metadata written apart: the programs of its hole
		split := []modelMode{{split: true, deletes: deleteLate}}
		initial := map[string]func(context.Context, modelClient) (blobfence.Version, error){"A by token 5": modelInitials["A by token 5"]}
		s := checkModel(t, split, storeOps, initial, []string{"put B", "put A, edit metadata"}, []string{"put B", "claim"}, []string{"put A", "put B after own version", "get, put B"})
		r.schedules, r.violations, modes = r.schedules+s.schedules, r.violations+s.violations, append(modes, split...)
		if r.example == nil {
			r.example = s.example
		}
	}
	t.Logf("%d schedules over %d server models: %d violations", r.schedules, len(modes), r.violations)
	if r.violations != 0 {
		t.Fatalf("%d schedules broke fencing; the first:\n%s", r.violations, strings.Join(r.example, "\n"))
	}
}

var modelInitials = map[string]func(context.Context, modelClient) (blobfence.Version, error){
	"absent": nil,
	"A by token 5": func(ctx context.Context, c modelClient) (blobfence.Version, error) {
		return newModelStore(c).PutReader(ctx, modelKey, strings.NewReader("A"), c.tok)
	},
}

// The record-only protocol, as a model: the token in the metadata,
// the bytes as they are, a conditional write on the ETag a HEAD returned
// (or a known version); the bytes the object holds written in the other
// form (a one-part upload's ETag); Delete with DELETE's If-Match. (Its
// write record's run of the same bytes and its torn-read checks are left
// out: the holes below do not go through them.)
type oldVersion struct {
	etag, md5, form string
	tok             fence.Token
	exists          bool
}

// modelHead is a HEAD of the model's key and the token its metadata says;
// out is nil when the key is absent.
func modelHead(ctx context.Context, c modelClient) (out *s3.HeadObjectOutput, tok fence.Token, err error) {
	out, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("model"), Key: aws.String(modelKey)})
	if httpStatus(err) == 404 {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	tok, _ = valid.ParseToken(out.Metadata[tokenMetadata])
	return out, tok, nil
}

func oldHead(ctx context.Context, c modelClient) (oldVersion, error) {
	out, tok, err := modelHead(ctx, c)
	if out == nil {
		return oldVersion{}, err
	}
	return oldVersion{etag: aws.ToString(out.ETag), md5: out.Metadata["model-md5"], form: out.Metadata["model-form-was"], tok: tok, exists: true}, nil
}

func oldPut(ctx context.Context, c modelClient, body string, known *oldVersion) error {
	sum := md5.Sum([]byte(body))
	for attempt := 0; attempt < defaultAttempts; attempt++ {
		cur := oldVersion{}
		if attempt == 0 && known != nil {
			cur = *known
		} else {
			var err error
			if cur, err = oldHead(ctx, c); err != nil {
				return err
			}
		}
		if err := fence.Check(modelKey, c.tok, cur.tok); err != nil {
			return err
		}
		form := ""
		if cur.exists && cur.md5 == hex.EncodeToString(sum[:]) && cur.form == "" {
			form = "mpu" // the other form, so that the ETag changes
		}
		in := &s3.PutObjectInput{Bucket: aws.String("model"), Key: aws.String(modelKey), Body: strings.NewReader(body),
			Metadata: map[string]string{tokenMetadata: c.tok.String(), "model-md5": hex.EncodeToString(sum[:]), "model-form": form, "model-form-was": form}}
		if cur.exists {
			in.IfMatch = aws.String(cur.etag)
		} else {
			in.IfNoneMatch = aws.String("*")
		}
		_, err := c.PutObject(ctx, in)
		if st := httpStatus(err); st == 412 || st == 404 {
			continue
		}
		return err
	}
	return blobfence.ErrContention
}

func oldDelete(ctx context.Context, c modelClient) error {
	for range defaultAttempts {
		cur, err := oldHead(ctx, c)
		if err != nil || !cur.exists {
			return err
		}
		if err := fence.Check(modelKey, c.tok, cur.tok); err != nil {
			return err
		}
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("model"), Key: aws.String(modelKey), IfMatch: aws.String(cur.etag)})
		if st := httpStatus(err); st == 412 || st == 404 {
			continue
		}
		return err
	}
	return blobfence.ErrContention
}

var oldOps = map[string]modelOp{
	"put A":  {"put A", func(ctx context.Context, c modelClient, _ blobfence.Version) error { return oldPut(ctx, c, "A", nil) }},
	"put B":  {"put B", func(ctx context.Context, c modelClient, _ blobfence.Version) error { return oldPut(ctx, c, "B", nil) }},
	"delete": {"delete", func(ctx context.Context, c modelClient, _ blobfence.Version) error { return oldDelete(ctx, c) }},
	// Its own last version: A, written by token 5 with a PUT.
	"put B after own version": {"put B after own version", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		a := md5.Sum([]byte("A"))
		return oldPut(ctx, c, "B", &oldVersion{etag: c.m.etag([]byte("A"), ""), md5: hex.EncodeToString(a[:]), tok: 5, exists: true})
	}},
}

var oldInitials = map[string]func(context.Context, modelClient) (blobfence.Version, error){
	"A by token 5": func(ctx context.Context, c modelClient) (blobfence.Version, error) {
		return blobfence.Version{}, oldPut(ctx, c, "A", nil)
	},
}

// TestModelCheckFindsOldHoles: the checker finds each hole of the
// record-only and metadata-token protocols, so that its 0 violations for the Store
// mean something. Each program runs over every schedule; the hole must
// show in at least one. The Store runs the same programs in
// TestModelCheck.
func TestModelCheckFindsOldHoles(t *testing.T) {
	md5Atomic, md5Late, md5Ignored := modelMode{deletes: deleteAtomic}, modelMode{deletes: deleteLate}, modelMode{deletes: deleteIgnored}
	for _, hole := range []struct {
		name string
		mode modelMode
		ops  [3]string // tokens 12, 9, 5
	}{
		{"A, B, A: a stale put of other bytes", md5Atomic, [3]string{"put A", "put B", "put B"}},
		{"A, B, A: a stale put of the same bytes (one-part upload form)", md5Atomic, [3]string{"put A", "put B", "put A"}},
		{"A, B, A: a stale delete", md5Atomic, [3]string{"put A", "put B", "delete"}},
		{"A, B, A: a put after the stale holder's own version", md5Atomic, [3]string{"put A", "put B", "put B after own version"}},
		{"A, B, A with checksum ETags", modelMode{checksumETags: true, deletes: deleteAtomic}, [3]string{"put A", "put B", "put B"}},
		{"delete, then the same bytes", md5Atomic, [3]string{"put A", "delete", "put B"}},
		{"a DELETE condition checked late", md5Late, [3]string{"put B", "delete", "put A"}},
		{"a DELETE condition ignored", md5Ignored, [3]string{"put B", "delete", "put A"}},
	} {
		r := explore(t, hole.mode, oldInitials["A by token 5"], [3]modelOp{oldOps[hole.ops[0]], oldOps[hole.ops[1]], oldOps[hole.ops[2]]})
		if r.violations == 0 {
			t.Errorf("%s: 0 violations in %d schedules of the record-only protocol; the checker missed the hole", hole.name, r.schedules)
			continue
		}
		t.Logf("%s: %d of %d schedules; the first:\n\t%s", hole.name, r.violations, r.schedules, strings.Join(r.example, "\n\t"))
	}
	for _, hole := range []struct {
		name string
		mode modelMode
		ops  [3]string // tokens 12, 9, 5
	}{
		{"metadata written after the ETag (versitygw --sidecar)", modelMode{split: true, deletes: deleteAtomic}, [3]string{"put B", "put B", "put A"}},
		{"an operator's metadata edit", modelMode{deletes: deleteAtomic}, [3]string{"put A, edit metadata", "put B", "put B"}},
	} {
		r := explore(t, hole.mode, metaInitial, [3]modelOp{metaOps[hole.ops[0]], metaOps[hole.ops[1]], metaOps[hole.ops[2]]})
		if r.violations == 0 {
			t.Errorf("%s: 0 violations in %d schedules of the metadata-token protocol; the checker missed the hole", hole.name, r.schedules)
			continue
		}
		t.Logf("%s: %d of %d schedules; the first:\n\t%s", hole.name, r.violations, r.schedules, strings.Join(r.example, "\n\t"))
	}
}

// The metadata-token protocol, as a model: envelopes as today, but the
// token read from the metadata, trusted when the write record predicts the
// ETag or when two HEADs in a row agree.
type metaVersion struct {
	etag, record string
	tok          fence.Token
	exists       bool
}

func metaRead(ctx context.Context, c modelClient) (metaVersion, error) {
	var prev *metaVersion
	for range defaultAttempts + 1 {
		out, tok, err := modelHead(ctx, c)
		if out == nil {
			return metaVersion{}, err
		}
		cur := metaVersion{etag: aws.ToString(out.ETag), record: out.Metadata[tokenMetadata+"-write"], tok: tok, exists: true}
		if f := strings.Fields(cur.record); len(f) == 4 && `"`+f[3]+`"` == cur.etag || prev != nil && *prev == cur {
			return cur, nil
		}
		prev = &cur
	}
	return metaVersion{}, blobfence.ErrContention
}

func metaPut(ctx context.Context, c modelClient, body string) error {
	for attempt := range defaultAttempts {
		cur, err := metaRead(ctx, c)
		if err != nil {
			return err
		}
		if err := fence.Check(modelKey, c.tok, cur.tok); err != nil {
			return err
		}
		nonce := fmt.Sprintf("w%da%d", c.w, attempt)
		stored := fmt.Sprintf("fencekit-blob 1 put %d %s\n%s", c.tok, nonce, body)
		sum := md5.Sum([]byte(stored))
		in := &s3.PutObjectInput{Bucket: aws.String("model"), Key: aws.String(modelKey), Body: strings.NewReader(stored),
			Metadata: map[string]string{tokenMetadata: c.tok.String(), tokenMetadata + "-write": "2 put " + nonce + " " + hex.EncodeToString(sum[:])}}
		if cur.exists {
			in.IfMatch = aws.String(cur.etag)
		} else {
			in.IfNoneMatch = aws.String("*")
		}
		_, err = c.PutObject(ctx, in)
		if st := httpStatus(err); st == 412 || st == 404 {
			continue
		}
		return err
	}
	return blobfence.ErrContention
}

var metaOps = map[string]modelOp{
	"put A": {"put A", func(ctx context.Context, c modelClient, _ blobfence.Version) error { return metaPut(ctx, c, "A") }},
	"put B": {"put B", func(ctx context.Context, c modelClient, _ blobfence.Version) error { return metaPut(ctx, c, "B") }},
	"get, put B": {"get, put B", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		s := newModelStore(c)
		if _, _, err := s.Get(ctx, modelKey); err != nil && !errors.Is(err, blobfence.ErrNotFound) {
			return err
		}
		return s.Put(ctx, modelKey, []byte("B"), c.tok) // from the version the Get remembered
	}},
	"put A, edit metadata": {"put A, edit metadata", func(ctx context.Context, c modelClient, _ blobfence.Version) error {
		err := metaPut(ctx, c, "A")
		c.editMetadata(modelKey)
		return err
	}},
}

func metaInitial(ctx context.Context, c modelClient) (blobfence.Version, error) {
	return blobfence.Version{}, metaPut(ctx, c, "A")
}
