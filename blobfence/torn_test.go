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

// Torn reads: a server whose GET reads the ETag, the metadata and the
// bytes of an object one after the other can pair them from two versions
// when the read races a PUT (versitygw's posix backend does). The faulty
// client replays such pairs deterministically; the race test meets them by
// chance.

// TestTornMetadataIsNotTrusted: a read that pairs the current ETag and
// bytes with an older write's metadata (or none) must not let an older
// token through: the token is what the bytes say.
func TestTornMetadataIsNotTrusted(t *testing.T) {
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
	for _, md := range []map[string]string{old.Metadata, {}} {
		f.tornMeta = []map[string]string{md}
		err = s.Put(ctx, "k", []byte("stale"), 7)
		var se *fence.StaleError
		if !errors.As(err, &se) || se.Current != 9 {
			t.Fatalf("put with token 7 after a read with metadata %v: %v; want StaleError current 9", md, err)
		}
	}
	wantStored(t, s, "k", "v2", 9)
}

// TestUnprovenReadsGiveUp: when no read can be proven (its ETag is neither
// the one the write record predicts nor the MD5 of the bytes, and the GET
// conditional on it is refused), the put gives up with ErrContention after
// MaxAttempts+1 rounds and writes nothing.
func TestUnprovenReadsGiveUp(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, &blobfence.Options{MaxAttempts: 2, VersionCache: -1})
	if err := s.Put(ctx, "k", []byte("v1"), 5); err != nil {
		t.Fatal(err)
	}
	gets, puts := len(f.sdkAttempts["GetObject"]), len(f.sdkAttempts["PutObject"])
	f.tornGets = []string{`"11111111111111111111111111111111"`, `"22222222222222222222222222222222"`, `"33333333333333333333333333333333"`}
	err := s.Put(ctx, "k", []byte("v2"), 7)
	if !errors.Is(err, blobfence.ErrContention) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("put over reads that are never proven: %v; want ErrContention", err)
	}
	if g, p := len(f.sdkAttempts["GetObject"])-gets, len(f.sdkAttempts["PutObject"])-puts; g != 6 || p != 0 {
		t.Fatalf("%d GETs and %d PUTs; want 6 (two per round, MaxAttempts+1 rounds) and none", g, p)
	}
	wantStored(t, s, "k", "v1", 5)
}

// TestTornGet: GetVersion must not return an ETag that is not proven to
// be the body's, since a put with After would write If-Match on it trusting
// the body's token. It reads again until a read is proven (the ETag is the
// MD5 of the bytes, or the write record of the same write predicts it), and gives up with
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
	// Two reads torn the same way are refused all the same.
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
// tokens 5 and 9, a read that pairs 9's ETag with 5's metadata must not be
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
	f.tornMeta = []map[string]string{old.Metadata}
	err = s.Put(ctx, "k", []byte("stale"), 7)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 9 {
		t.Fatalf("put with token 7 after a torn read of token 5's metadata with token 9's ETag: %v; want StaleError current 9", err)
	}
	wantStored(t, s, "k", "same", 9)
}
