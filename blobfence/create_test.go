package blobfence_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

const report = "day,orders\n2026-12-04,1042\n"

// rawGet reads key with a plain GetObject, as any other S3 tool does.
func rawGet(t *testing.T, c *s3.Client, bucket, key string) (*s3.GetObjectOutput, []byte) {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out, b
}

// TestCreateStoresRawBytes: other readers get exactly the bytes, with
// their length; the store reads them back with the token; one request.
func TestCreateStoresRawBytes(t *testing.T) {
	store, c, env := newStore(t, &blobfence.Options{Identity: "worker/1"})
	ctx := context.Background()
	if err := store.Create(ctx, "reports/daily.csv", []byte(report), 41, blobfence.ContentType("text/csv")); err != nil {
		t.Fatal(err)
	}
	if n := c.total(); n != 1 {
		t.Errorf("Create sent %d requests, want 1", n)
	}
	out, b := rawGet(t, env.Client, env.Bucket, "reports/daily.csv")
	if string(b) != report || aws.ToInt64(out.ContentLength) != int64(len(report)) || aws.ToString(out.ContentType) != "text/csv" {
		t.Fatalf("a plain GetObject got %q (length %d, type %q); want the report as written", b, aws.ToInt64(out.ContentLength), aws.ToString(out.ContentType))
	}
	wantStored(t, store, "reports/daily.csv", report, 41)
}

// TestCreateOnce: a second Create of the key, older or newer token, is
// refused with ErrExists naming the creator and its token; the object
// stays as created. A key written by Put is refused too.
func TestCreateOnce(t *testing.T) {
	store, _, env := newStore(t, &blobfence.Options{Identity: "worker/1"})
	late := mustNew(t, env.Client, env.Bucket, &blobfence.Options{Identity: "worker/2"})
	ctx := context.Background()
	if err := store.Create(ctx, "r", []byte(report), 41); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []fence.Token{40, 41, 99} {
		err := late.Create(ctx, "r", []byte("another report"), tok)
		if !errors.Is(err, blobfence.ErrExists) || !strings.Contains(err.Error(), `created by "worker/1" with token 41`) {
			t.Fatalf("second Create with token %d = %v; want ErrExists naming worker/1 and token 41", tok, err)
		}
	}
	wantStored(t, store, "r", report, 41)
	// Fenced writes refuse a created key too, whatever their token.
	for name, write := range map[string]func() error{
		"Put":    func() error { return late.Put(ctx, "r", []byte("overwritten"), 99) },
		"Delete": func() error { return late.Delete(ctx, "r", 99) },
		"Claim":  func() error { return late.Claim(ctx, "r", 99) },
	} {
		if err := write(); !errors.Is(err, blobfence.ErrExists) || !strings.Contains(err.Error(), `created by "worker/1"`) {
			t.Errorf("%s over a created key = %v; want ErrExists naming worker/1", name, err)
		}
	}
	wantStored(t, store, "r", report, 41)
	// Retire removes a created object; the key can be created again.
	if err := late.Retire(ctx, "r"); err != nil {
		t.Fatalf("Retire of a created object: %v", err)
	}
	if err := late.Create(ctx, "r", []byte("again"), 50); err != nil {
		t.Fatalf("Create after Retire: %v", err)
	}
	if err := store.Put(ctx, "p", []byte("fenced"), 7); err != nil {
		t.Fatal(err)
	}
	if err := store.Create(ctx, "p", []byte(report), 9); !errors.Is(err, blobfence.ErrExists) || !strings.Contains(err.Error(), "token 7") {
		t.Fatalf("Create over a Put's object = %v; want ErrExists naming token 7", err)
	}
}

// TestCreateRacing: of 8 racing Creates of one key, one lands.
func TestCreateRacing(t *testing.T) {
	store, _, env := newStore(t, nil)
	client := pooledClient(env, 16)
	var ok, exists atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		s := mustNew(t, client, env.Bucket, nil)
		wg.Go(func() {
			err := s.Create(context.Background(), "race", []byte{byte('a' + i)}, fence.Token(10+i))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, blobfence.ErrExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || exists.Load() != 7 {
		t.Fatalf("%d Creates landed, %d refused; want 1 and 7", ok.Load(), exists.Load())
	}
	if _, _, err := store.Get(context.Background(), "race"); err != nil {
		t.Fatal(err)
	}
}

// TestCreateBadInputSendsNothing: After, a reserved metadata name and a
// bad identity are refused before any request.
func TestCreateBadInputSendsNothing(t *testing.T) {
	store, c, env := newStore(t, nil)
	ctx := context.Background()
	v, err := store.PutReader(ctx, "k", bytes.NewReader([]byte("x")), 1)
	if err != nil {
		t.Fatal(err)
	}
	before := c.total()
	for _, opts := range [][]blobfence.PutOption{
		{blobfence.After(v)},
		{blobfence.Metadata(map[string]string{"fencekit-token-created": "x"})},
	} {
		if err := store.Create(ctx, "k", []byte("y"), 2, opts...); !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("Create with %d bad options = %v; want ErrInvalid", len(opts), err)
		}
	}
	if err := store.Create(ctx, "k", []byte("y"), 0); !errors.Is(err, fence.ErrInvalid) {
		t.Errorf("Create with token 0 = %v; want ErrInvalid", err)
	}
	// A body that looks like an envelope would be read as one, with its
	// own token and state (a tombstone: "absent", and created twice).
	for _, body := range []string{"fencekit-blob 1 put 5 N\nsnapshot", "fencekit-blob 1 del 3 X\n"} {
		if err := store.Create(ctx, "snap", []byte(body), 1000); !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("Create of %q = %v; want ErrInvalid", body, err)
		}
	}
	if n := c.total() - before; n != 0 {
		t.Errorf("bad Creates sent %d requests", n)
	}
	for _, id := range []string{"tab\there", "é", " padded", strings.Repeat("x", 300)} {
		if _, err := blobfence.New(env.Client, env.Bucket, &blobfence.Options{Identity: id}); !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("New with Identity %q = %v; want ErrInvalid", id, err)
		}
	}
}

// TestEnvelopeRecipes: docs/s3.md's one-liners that drop the envelope's
// header line give other readers the body of a Put's object.
func TestEnvelopeRecipes(t *testing.T) {
	store, _, env := newStore(t, nil)
	body := "line one\nline two\n"
	if err := store.Put(context.Background(), "enveloped", []byte(body), 12); err != nil {
		t.Fatal(err)
	}
	_, raw := rawGet(t, env.Client, env.Bucket, "enveloped")
	for _, recipe := range [][]string{
		{"sh", "-c", "tail -n +2"},
		{"python3", "-c", `import sys; sys.stdout.buffer.write(sys.stdin.buffer.read().split(b"\n", 1)[1])`},
	} {
		if _, err := exec.LookPath(recipe[0]); err != nil {
			t.Logf("%s not installed: skipped", recipe[0])
			continue
		}
		cmd := exec.Command(recipe[0], recipe[1:]...)
		cmd.Stdin = bytes.NewReader(raw)
		out, err := cmd.Output()
		if err != nil || string(out) != body {
			t.Errorf("%s: %q, %v; want %q", strings.Join(recipe, " "), out, err, body)
		}
	}
}
