package blobfence

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// TestEnvelopeCopyNeedsNoBigBuffer: the SDK hashes a put's body with
// io.Copy; copying a 1 KiB envelope allocates well under io.Copy's 32 KiB
// buffer (envelopeReader.WriteTo), and yields the bytes Read yields, also
// from the middle of the header or of the content.
func TestEnvelopeCopyNeedsNoBigBuffer(t *testing.T) {
	body := []byte(strings.Repeat("fencekit", 128))
	src := bytes.NewReader(append([]byte("skipped"), body...))
	c := &content{r: src, start: 7, size: int64(len(body))}
	er := &envelopeReader{head: []byte("header:"), content: c}
	want, err := io.ReadAll(er)
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []int64{0, 3, 7, 500, int64(len(want))} {
		if _, err := er.Seek(from, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if n, err := io.Copy(&got, er); err != nil || n != int64(len(want))-from || !bytes.Equal(got.Bytes(), want[from:]) {
			t.Fatalf("io.Copy from %d: %d bytes, %v; want %d bytes equal to Read's", from, n, err, len(want)-int(from))
		}
	}
	// Under -race sync.Pool drops a quarter of its Puts at random: a
	// copy then takes a new 32 KiB buffer, 8 KiB a copy on average
	// (8,671 in one CI run), against 32 KiB a copy for a copy buffer
	// taken every time.
	limit := uint64(8 << 10)
	if raceEnabled {
		limit = 16 << 10
	}
	per := bytesPerCall(func() {
		if _, err := er.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(sha256.New(), er); err != nil {
			t.Fatal(err)
		}
	})
	if per > limit {
		t.Fatalf("hashing a %d-byte envelope with io.Copy allocated %d bytes per copy; want under %d (no 32 KiB copy buffer)", len(want), per, limit)
	}
}

// TestPutHashesWithoutCopyBuffers: a put reads its content twice before
// sending (its MD5, then the SDK's payload hash through io.Copy); neither
// pass allocates a copy buffer (up to 32 KiB each through a LimitReader),
// at 1 KiB or at 256 KiB, and both see the whole envelope.
func TestPutHashesWithoutCopyBuffers(t *testing.T) {
	// Under -race sync.Pool drops a quarter of its Puts at random: two
	// passes then take 16 KiB a put on average (16,032 in one CI run),
	// against 64 KiB for copy buffers taken every time.
	limit := uint64(512)
	if raceEnabled {
		limit = 32 << 10
	}
	for _, size := range []int{1 << 10, 256 << 10} {
		body := bytes.Repeat([]byte("fencekit"), size/8)
		c := &content{r: bytes.NewReader(body), size: int64(size)}
		er := &envelopeReader{head: []byte("header\n"), content: c}
		wantMD5 := md5.Sum(append([]byte("header\n"), body...))
		wantSHA := sha256.Sum256(append([]byte("header\n"), body...))
		pass := func() {
			sum, err := er.md5()
			if err != nil || sum != wantMD5 {
				t.Fatalf("%d bytes: md5 %x, %v; want %x", size, sum, err, wantMD5)
			}
			h := sha256.New()
			if _, err := io.Copy(h, er); err != nil || !bytes.Equal(h.Sum(nil), wantSHA[:]) {
				t.Fatalf("%d bytes: io.Copy hashed %x, %v; want %x", size, h.Sum(nil), err, wantSHA)
			}
		}
		pass() // fills the pool
		if per := bytesPerCall(pass); per > limit {
			t.Fatalf("hashing a %d-byte envelope twice allocated %d bytes per put; want under %d (no copy buffer)", size, per, limit)
		}
	}
}

// TestMetadataLimitCountsTokenAndRecord: a put's metadata check, made once
// before any request, counts the longest token and the write record: the
// caller's metadata that fills S3's 2 KB with them is sent, one byte more is
// refused with nothing sent, whatever the put's own token.
func TestMetadataLimitCountsTokenAndRecord(t *testing.T) {
	c := &refusingS3{}
	s, err := New(c, "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	room := maxUserMetadata - len("a") - len(s.tokenKey) - len(valid.MaxToken.String()) - len(s.writeKey) - len(longestRecord)
	for _, extra := range []int{0, 1} {
		c.calls = 0
		md := Metadata(map[string]string{"a": strings.Repeat("v", room+extra)})
		err := s.Put(context.Background(), "k", []byte("x"), 1, md)
		switch {
		case extra == 0 && (c.calls == 0 || errors.Is(err, fence.ErrInvalid)):
			t.Errorf("metadata at S3's limit: %v after %d requests; want it sent", err, c.calls)
		case extra == 1 && (c.calls != 0 || !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), "S3 allows 2048")):
			t.Errorf("metadata 1 byte over S3's limit: %v after %d requests; want fence.ErrInvalid, nothing sent", err, c.calls)
		}
	}
}

// refusingS3 counts the reads and writes of a put and answers each with an
// error (its other methods are nil: a call fails the test).
type refusingS3 struct {
	S3API
	calls int
}

var errNoServer = errors.New("refusingS3: no server")

func (c *refusingS3) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.calls++
	return nil, errNoServer
}

func (c *refusingS3) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.calls++
	return nil, errNoServer
}

// TestPutWritesLikePlain: a put's request reaches the connection in as
// many writes as a plain PutObject's of the same body (net/http copies a
// body the SDK wrapped with one write per Read, as net.TCPConn.ReadFrom
// does: a Read that stopped after the envelope's header line sent it as a
// segment of its own), and the server gets the envelope.
func TestPutWritesLikePlain(t *testing.T) {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<Error><Code>NoSuchKey</Code></Error>")
			return
		}
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	}))
	defer srv.Close()
	var writes atomic.Int64
	dialer := &net.Dialer{}
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("key", "secret", ""),
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			return &countingConn{c, &writes}, err
		}}},
	})
	ctx := context.Background()
	s, err := New(client, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, size := range []int{1 << 10, 100 << 10} {
		tok := fence.Token(10 * (i + 1))
		body := bytes.Repeat([]byte("fencekit"), size/8)
		writes.Store(0)
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
		plain := writes.Load()
		v, err := s.PutReader(ctx, "k", bytes.NewReader(body), tok)
		if err != nil {
			t.Fatal(err)
		}
		writes.Store(0)
		if _, err := s.PutReader(ctx, "k", bytes.NewReader(body), tok+1, After(v)); err != nil {
			t.Fatal(err)
		}
		if n := writes.Load(); n > plain {
			t.Errorf("a %d-byte put with After took %d writes, a plain PutObject %d; want no more", size, n, plain)
		}
		if e, b, err := decode(got); err != nil || e.Token != tok+1 || !bytes.Equal(b, body) {
			t.Errorf("%d bytes: the server got %.60q...: %v; want the envelope of token %d and the body", size, got, err, tok+1)
		}
	}
}

// countingConn counts its writes. Its ReadFrom copies as net.TCPConn's
// does from a reader it cannot splice: one Write per Read.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func (c *countingConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c}, r)
}

// bytesPerCall is the bytes fn allocates a call: the least of five
// batches of 20, since a collection emptying a pool, or another goroutine
// allocating, only adds to a batch.
func bytesPerCall(fn func()) uint64 {
	const n = 20
	per := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			fn()
		}
		runtime.ReadMemStats(&after)
		per = min(per, (after.TotalAlloc-before.TotalAlloc)/n)
	}
	return per
}
