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
// <MetadataKey>-write: "<token> <md5 of the body, hex> <write id>". It lets
// a reader check that the ETag and the token it got belong to the same
// object, and a writer recognize its own write after a lost reply.
//
// The check exists because a HEAD is not always one atomic read. versitygw's
// posix backend, for one, reads the metadata and then the ETag by path,
// each from whichever file is linked there at that moment; a HEAD racing a
// PUT can return the new ETag with the old token. A writer deciding on such
// a pair would pass a conditional write with a token older than the one
// stored (the race test caught this). So a read counts only when it is
// self-consistent (the record's MD5 is the ETag and its token is the
// token), or, for objects without a record or with ETags that are not an
// MD5 (multipart uploads, SSE-KMS, servers configured otherwise), when two
// reads in a row agree.

// writeRecord is the parsed value of the <MetadataKey>-write entry.
type writeRecord struct {
	tok fence.Token
	md5 string // 32 lower-case hex digits
	id  string
}

func (w writeRecord) String() string { return w.tok.String() + " " + w.md5 + " " + w.id }

// parseWriteRecord parses a write record; ok is false for anything that is
// not one (another tool may have written the entry).
func parseWriteRecord(s string) (w writeRecord, ok bool) {
	f := strings.Fields(s)
	if len(f) != 3 || len(f[1]) != md5.Size*2 || strings.Join(f, " ") != s {
		return writeRecord{}, false
	}
	tok, err := fence.ParseToken(f[0])
	if err != nil {
		return writeRecord{}, false
	}
	if b, err := hex.DecodeString(f[1]); err != nil || hex.EncodeToString(b) != f[1] {
		return writeRecord{}, false
	}
	return writeRecord{tok: tok, md5: f[1], id: f[2]}, true
}

// selfConsistent reports whether st's ETag and token provably come from
// one object: its write record names the same token and, as MD5, the ETag.
func (st headState) selfConsistent() bool {
	return st.hasRecord && st.record.tok == st.Token && st.ETag == `"`+st.record.md5+`"`
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
		if !st.Exists() || st.selfConsistent() || prev != nil && *prev == st {
			return st, nil
		}
		prev = &st
	}
	return headState{}, fmt.Errorf("%w: %s kept changing between reads (%d reads)", ErrContention, s.resource(key), s.maxAttempts+1)
}

// bodyMD5 hashes r from start to start+size and leaves r at start.
func bodyMD5(r io.ReadSeeker, start, size int64) (string, error) {
	h := md5.New()
	n, err := io.Copy(h, io.LimitReader(r, size))
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes of %d", n, size)
	}
	if _, serr := r.Seek(start, io.SeekStart); err == nil {
		err = serr
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// isMD5ETag reports whether etag looks like an MD5 digest: 32 hex digits
// in quotes.
func isMD5ETag(etag string) bool {
	if len(etag) != 34 || etag[0] != '"' || etag[33] != '"' {
		return false
	}
	_, err := hex.DecodeString(etag[1:33])
	return err == nil
}
