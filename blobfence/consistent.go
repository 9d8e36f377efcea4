package blobfence

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// A put stores, next to the token, a write record in the metadata entry
// <MetadataKey>-write:
//
//	<token> <md5 of the body, hex> <form> <write id> <alt> <fields>[ opaque]
//
// It lets a reader check that the ETag and the token it got belong to the
// same object, a writer recognize its own write after a lost reply, and a
// writer of the same bytes again choose an ETag no older writer holds
// (<alt> and <fields>, see same.go).
//
// The check exists because a HEAD is not always one atomic read. versitygw's
// posix backend, for one, reads the metadata and then the ETag by path,
// each from whichever file is linked there at that moment; a HEAD racing a
// PUT can return the new ETag with the old token. A writer deciding on such
// a pair would pass a conditional write with a token older than the one
// stored (the race test caught this). So a read counts only when it is
// self-consistent (the ETag is what the record's MD5 gives in the record's
// form, a PUT or a one-part upload, and the record's token is the token), or, for objects without a record, when two
// reads in a row agree. On servers whose ETags are not content hashes
// (SSE-KMS), a read with a record is trusted as it is.

// writeRecord is the parsed value of the <MetadataKey>-write entry.
type writeRecord struct {
	tok  fence.Token
	md5  string // 32 lower-case hex digits
	form form   // formPut or formMultipart: how the body was written
	id   string
	// alt is the token under which the same bytes were last written in the
	// other form (PUT or one-part multipart upload) in the run of writes of
	// these bytes that this version ends; hasAlt is false when they were not.
	alt    fence.Token
	hasAlt bool
	fields string // digest of the object's other fields (Content-Type, metadata...)
	// opaque: the store that wrote the record had seen the server give its
	// puts ETags that are not content hashes.
	opaque bool
}

func (w writeRecord) String() string {
	alt := "-"
	if w.hasAlt {
		alt = w.alt.String()
	}
	s := w.tok.String() + " " + w.md5 + " " + formNames[w.form] + " " + w.id + " " + alt + " " + w.fields
	if w.opaque {
		s += " opaque"
	}
	return s
}

// parseWriteRecord parses a write record; ok is false for anything that is
// not one (another tool may have written the entry).
func parseWriteRecord(s string) (writeRecord, bool) {
	f := strings.Fields(s)
	if len(f) != 6 && (len(f) != 7 || f[6] != "opaque") || len(f[1]) != md5.Size*2 {
		return writeRecord{}, false
	}
	tok, err := fence.ParseToken(f[0])
	if err != nil {
		return writeRecord{}, false
	}
	if b, err := hex.DecodeString(f[1]); err != nil || hex.EncodeToString(b) != f[1] {
		return writeRecord{}, false
	}
	w := writeRecord{tok: tok, md5: f[1], id: f[3], fields: f[5], opaque: len(f) == 7}
	switch f[2] {
	case formNames[formPut]:
		w.form = formPut
	case formNames[formMultipart]:
		w.form = formMultipart
	default:
		return writeRecord{}, false
	}
	if f[4] != "-" {
		if w.alt, err = fence.ParseToken(f[4]); err != nil {
			return writeRecord{}, false
		}
		w.hasAlt = true
	}
	if w.String() != s { // one canonical spelling
		return writeRecord{}, false
	}
	return w, true
}

var formNames = map[form]string{formPut: "put", formMultipart: "mpu"}

// etag is the ETag S3 gives the version the record describes: the MD5 of
// a PUT, or md5(md5)-1 of a one-part multipart upload.
func (w writeRecord) etag() string {
	var sum [md5.Size]byte
	if _, err := hex.Decode(sum[:], []byte(w.md5)); err != nil {
		return ""
	}
	if w.form == formMultipart {
		return multipartETag(sum)
	}
	return plainETag(sum)
}

// trusted reports whether one read st can be trusted: its write record
// names the same token, and the ETag its MD5 gives in its form, so ETag
// and token come from one object. (The form matters: a read pairing a
// one-part upload's ETag with the metadata of a PUT of the same bytes is
// torn.) On a server whose ETags are not content hashes (this store, or
// the one that wrote the record, saw one of its own puts get another
// ETag), a read with a write record is trusted as it is: the store then
// relies on the server reading ETag and metadata together, as AWS S3 does.
func (s *Store) trusted(st headState) bool {
	if !st.hasRecord || st.record.tok != st.Token {
		return false
	}
	return s.opaque.Load() || st.record.opaque || st.ETag == st.record.etag()
}

// readVersion reads the object's version until the read can be trusted:
// one self-consistent HEAD, or two in a row that agree. An absent key is
// the zero headState. It makes at most maxAttempts+1 reads.
func (s *Store) readVersion(ctx context.Context, key string) (headState, error) {
	var prev *headState
	for range s.maxAttempts + 1 {
		st, err := s.head(ctx, key)
		if err != nil {
			return headState{}, err
		}
		if !st.Exists() || s.trusted(st) || prev != nil && *prev == st {
			return st, nil
		}
		prev = &st
	}
	return headState{}, fmt.Errorf("%w: the object kept changing between reads (%d reads)", ErrContention, s.maxAttempts+1)
}

// bodyMD5 hashes r from start to start+size and leaves r at start.
func bodyMD5(r io.ReadSeeker, start, size int64) (sum [md5.Size]byte, err error) {
	h := md5.New()
	n, err := io.Copy(h, io.LimitReader(r, size))
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes of %d", n, size)
	}
	if _, serr := r.Seek(start, io.SeekStart); err == nil {
		err = serr
	}
	h.Sum(sum[:0])
	return sum, err
}
