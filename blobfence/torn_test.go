package blobfence_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

// Torn reads: a server whose HEAD or GET reads the ETag and the metadata of
// an object one after the other can pair them from two versions when the
// read races a PUT (versitygw's posix backend does). The faulty client
// replays such pairs deterministically; the race test meets them by chance.

// TestTornHeadIsNotTrusted: a HEAD that pairs the current ETag with an
// older object's metadata (what versitygw returns when the HEAD races a
// PUT) must not let an older token through.
func TestTornHeadIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	if err := s.Put(ctx, "k", []byte("v1"), 5); err != nil {
		t.Fatal(err)
	}
	old, err := f.env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &f.env.Bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("v2"), 9); err != nil {
		t.Fatal(err)
	}
	heads := len(f.sdkAttempts["HeadObject"])
	f.tornHeads = []map[string]string{old.Metadata}
	err = s.Put(ctx, "k", []byte("stale"), 7)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 9 {
		t.Fatalf("put with token 7 after a torn read of token 5: %v; want StaleError current 9", err)
	}
	if n := len(f.sdkAttempts["HeadObject"]) - heads; n != 2 {
		t.Fatalf("%d HEADs; want 2 (the torn one is not self-consistent, so it is read again)", n)
	}
	// Without write records, two agreeing reads are needed: a torn read of a
	// foreign object's metadata is not trusted either.
	f.tornHeads = []map[string]string{{}}
	if err := s.Put(ctx, "k", []byte("stale"), 7); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("put with token 7 after a torn read of no metadata: %v; want ErrStale", err)
	}
	wantStored(t, s, "k", "v2", 9)
}

// TestTornHeadsNeverAgree: when no HEAD can be trusted (none is
// self-consistent and no two in a row agree), the put gives up with
// ErrContention after MaxAttempts+1 reads and writes nothing.
func TestTornHeadsNeverAgree(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, &blobfence.Options{MaxAttempts: 2})
	if err := s.Put(ctx, "k", []byte("v1"), 5); err != nil {
		t.Fatal(err)
	}
	heads, puts := len(f.sdkAttempts["HeadObject"]), len(f.sdkAttempts["PutObject"])
	tok := blobfence.DefaultMetadataKey
	f.tornHeads = []map[string]string{{tok: "1"}, {tok: "2"}, {tok: "3"}}
	err := s.Put(ctx, "k", []byte("v2"), 7)
	if !errors.Is(err, blobfence.ErrContention) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("put over reads that never agree: %v; want ErrContention", err)
	}
	if h, p := len(f.sdkAttempts["HeadObject"])-heads, len(f.sdkAttempts["PutObject"])-puts; h != 3 || p != 0 {
		t.Fatalf("%d HEADs and %d PUTs; want 3 (MaxAttempts+1) and none", h, p)
	}
	wantStored(t, s, "k", "v1", 5)
}

// TestTornGet: GetVersion must not return an ETag that is not proven to
// be the body's, since a put with After would write If-Match on it trusting
// the body's token. It reads again until a read is proven (the ETag is the
// MD5 of the bytes, or a HEAD shows the same write), and gives up with
// ErrContention when none is; Get, which returns no ETag, reads once.
func TestTornGet(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, &blobfence.Options{MaxAttempts: 2})
	v1, err := s.PutReader(ctx, "k", strings.NewReader("v1"), 5)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := s.PutReader(ctx, "k", strings.NewReader("v2"), 9)
	if err != nil {
		t.Fatal(err)
	}
	gets := func() int { return len(f.sdkAttempts["GetObject"]) }

	f.tornGets = []string{v1.ETag()}
	n := gets()
	body, v, err := s.GetVersion(ctx, "k")
	if err != nil || string(body) != "v2" || v != v2 || gets()-n != 2 {
		t.Fatalf("GetVersion after one torn read: %q %+v %v after %d GETs; want v2 %+v after 2", body, v, err, gets()-n, v2)
	}

	// Reads torn in different ways never agree: ErrContention.
	f.tornGets = []string{v1.ETag(), `"00000000000000000000000000000000"`, v1.ETag()}
	n = gets()
	if _, v, err := s.GetVersion(ctx, "k"); !errors.Is(err, blobfence.ErrContention) || v != (blobfence.Version{}) || gets()-n != 3 {
		t.Fatalf("GetVersion when every read is torn: %+v, %v after %d GETs; want ErrContention after 3 (MaxAttempts+1)", v, err, gets()-n)
	}
	// Two reads torn the same way are refused all the same: the HEAD shows
	// another write.
	f.tornGets = slices.Repeat([]string{v1.ETag()}, 2)
	n = gets()
	if _, v, err := s.GetVersion(ctx, "k"); err != nil || v != v2 || gets()-n != 3 {
		t.Fatalf("GetVersion over two reads torn alike: %+v, %v after %d GETs; want %+v after 3", v, err, gets()-n, v2)
	}

	f.tornGets = []string{v1.ETag()}
	n = gets()
	if body, tok, err := s.Get(ctx, "k"); err != nil || string(body) != "v2" || tok != 9 || gets()-n != 1 {
		t.Fatalf("Get over a torn read: %q, %d, %v after %d GETs; want v2, 9 after 1", body, tok, err, gets()-n)
	}
}

// TestTornHeadAcrossSameBytes: after the same bytes were written under
// tokens 5 and 9, a HEAD that pairs 9's ETag with 5's metadata must not be
// trusted: a writer with token 7 deciding on that pair would land over 9.
func TestTornHeadAcrossSameBytes(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	if err := s.Put(ctx, "k", []byte("same"), 5); err != nil {
		t.Fatal(err)
	}
	old, err := f.env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &f.env.Bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("same"), 9); err != nil {
		t.Fatal(err)
	}
	f.tornHeads = []map[string]string{old.Metadata}
	err = s.Put(ctx, "k", []byte("stale"), 7)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 9 {
		t.Fatalf("put with token 7 after a torn read of token 5's metadata with token 9's ETag: %v; want StaleError current 9", err)
	}
	wantStored(t, s, "k", "same", 9)
}
