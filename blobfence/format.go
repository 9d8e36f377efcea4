package blobfence

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// The stored object is an envelope: one header line, then the caller's
// bytes.
//
//	fencekit-blob 1 <state> <token> <nonce>\n<body>
//
// state is "put" (the object holds body) or "del" (a tombstone: the key
// reads as absent, the body is empty, the token still fences it). nonce is
// random and new for every write, so every write's bytes, and hence its
// ETag, differ from every earlier state of the key, whatever the body: an
// If-Match on an ETag the writer read passes only while that very write
// is current. The header is the token; the metadata holds a copy for
// people and a write record:
//
//	x-amz-meta-fencekit-token:       <token>
//	x-amz-meta-fencekit-token-write: 2 <state> <nonce> <md5 of the stored bytes, hex>
//
// The record's MD5 is the ETag the object has on a server whose ETags are
// the MD5 of the bytes (AWS without SSE-KMS, versitygw, SeaweedFS): a read whose ETag
// equals it and whose header has its nonce read the ETag and bytes of the
// same write. Bytes that do not start with the header's magic were written
// as a record-only object (its record holds the token) or by another tool
// (token 0).

// headerMagic starts every envelope.
const headerMagic = "fencekit-blob 1 "

// recordFormat starts the write record of an envelope.
const recordFormat = "2"

// maxHeaderLen bounds the header line a decoder looks for: the magic, the
// state, a token of 19 digits and a nonce of 26 characters fit well.
const maxHeaderLen = 128

const (
	statePut = "put"
	stateDel = "del"
)

// envelope is the decoded header of a stored object.
type envelope struct {
	Deleted bool        // a tombstone: the key reads as absent
	Token   fence.Token // the token of the write
	Nonce   string      // unique per write
}

// header returns the header line of e.
func (e envelope) header() []byte {
	return []byte(headerMagic + e.state() + " " + e.Token.String() + " " + e.Nonce + "\n")
}

func (e envelope) state() string {
	if e.Deleted {
		return stateDel
	}
	return statePut
}

// record returns the write record of e stored with sum, the MD5 of the
// stored bytes.
func (e envelope) record(sum [md5.Size]byte) string {
	return recordFormat + " " + e.state() + " " + e.Nonce + " " + hex.EncodeToString(sum[:])
}

// decode splits the bytes of an object a [Store] wrote into its envelope
// and the caller's body: the body starts after the first '\n'; the line
// before it is "fencekit-blob 1 <put|del> <token> <nonce>". Errors wrap
// [ErrBadMetadata].
func decode(stored []byte) (envelope, []byte, error) {
	line, _, ok := bytes.Cut(stored[:min(len(stored), maxHeaderLen)], []byte("\n"))
	if !ok {
		return envelope{}, nil, errorf("%v: the object has no fencekit header line", ErrBadMetadata)
	}
	body := stored[len(line)+1:]
	f := strings.Fields(string(line))
	if len(f) != 5 || f[0]+" "+f[1]+" " != headerMagic || f[2] != statePut && f[2] != stateDel || f[4] == "" {
		return envelope{}, nil, errorf("%v: the fencekit header %q is not %q<put|del> <token> <nonce>", ErrBadMetadata, line, headerMagic)
	}
	tok, err := valid.ParseToken(f[3])
	if err != nil {
		return envelope{}, nil, errorf("%v: the fencekit header: %s", ErrBadMetadata, err.Error()) // its text, not its ErrInvalid
	}
	e := envelope{Deleted: f[2] == stateDel, Token: tok, Nonce: f[4]}
	if !bytes.Equal(e.header(), stored[:len(line)+1]) {
		return envelope{}, nil, errorf("%v: the fencekit header %q is not in its one canonical spelling", ErrBadMetadata, line)
	}
	return e, body, nil
}

// writeRecord is what an object's metadata says of the write that
// produced it. Metadata is a hint: it is read apart from the bytes on some
// servers and dropped by outside edits, so a record proves a version only
// when the bytes read with the ETag agree with it (see decode).
type writeRecord struct {
	envelope bool        // the envelope form: the nonce of an envelope and the MD5 of its bytes
	old      bool        // the record-only form: the token and the MD5 of the bytes as they are
	nonce    string      // envelope only
	token    fence.Token // old form only
	sum      [md5.Size]byte
	etag     string // the ETag the record predicts on a server whose ETags are the MD5
}

// parseRecord parses the <MetadataKey>-write entry: the envelope form,
// or the record-only form (<token> <md5> <put|mpu> <id> <alt> <fields>[
// opaque]), whose MD5 and form predict the ETag. ok is false for anything
// else (no entry, or another tool wrote it).
func parseRecord(raw string) (writeRecord, bool) {
	f := strings.Fields(raw)
	switch {
	case len(f) == 4 && f[0] == recordFormat && (f[1] == statePut || f[1] == stateDel):
		sum, ok := md5Hex(f[3])
		if !ok {
			return writeRecord{}, false
		}
		return writeRecord{envelope: true, nonce: f[2], sum: sum, etag: plainETag(sum)}, true
	case len(f) == 6 || len(f) == 7 && f[6] == "opaque":
		sum, ok := md5Hex(f[1])
		tok, err := valid.ParseToken(f[0])
		if !ok || err != nil {
			return writeRecord{}, false
		}
		switch f[2] {
		case "put":
			return writeRecord{old: true, token: tok, sum: sum, etag: plainETag(sum)}, true
		case "mpu":
			return writeRecord{old: true, token: tok, sum: sum, etag: multipartETag(sum)}, true
		}
	}
	return writeRecord{}, false
}

func md5Hex(s string) (sum [md5.Size]byte, ok bool) {
	if len(s) != 2*md5.Size {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(s)); err != nil || hex.EncodeToString(sum[:]) != s {
		return sum, false
	}
	return sum, true
}

// plainETag is the ETag S3 gives a single PUT of bytes with MD5 sum.
func plainETag(sum [md5.Size]byte) string { return strconv.Quote(hex.EncodeToString(sum[:])) }

// multipartETag is the ETag S3 gives a one-part multipart upload of bytes
// with MD5 sum (record-only objects): md5(sum), then "-1".
func multipartETag(sum [md5.Size]byte) string {
	m := md5.Sum(sum[:])
	return strconv.Quote(hex.EncodeToString(m[:]) + "-1")
}

// md5Shaped reports whether etag looks like the MD5 of the bytes (32
// lower-case hex digits, quoted), as single PUTs without SSE-KMS get on
// AWS and versitygw. Such an ETag is trusted only when the MD5 of bytes
// proves it.
func md5Shaped(etag string) bool {
	u, err := strconv.Unquote(etag)
	if err != nil || len(u) != 2*md5.Size {
		return false
	}
	_, ok := md5Hex(u)
	return ok
}
