package redislease

import (
	"errors"
	"github.com/fencekit/fencekit/internal/valid"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/lease"
)

// FuzzName checks that every accepted name maps to keys whose Redis
// Cluster hash tag is exactly the name (so the lock and counter share a
// slot, and two names never share keys), and that rejections are clear.
func FuzzName(f *testing.F) {
	for _, s := range []string{"a", "job:x", "{x}", "a{b", "", "日本", "a b", "\xff", strings.Repeat("z", 1025)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := leasearg.Name(name)
		if err != nil {
			if !errors.Is(err, lease.ErrInvalid) || !strings.HasPrefix(err.Error(), "name") {
				t.Fatalf("leasearg.Name(%q) = %v: not a clear ErrInvalid", name, err)
			}
			return
		}
		if name == "" || len(name) > valid.MaxNameLen || !utf8.ValidString(name) || strings.ContainsAny(name, "{} \t\r\n") {
			t.Fatalf("leasearg.Name accepted %q", name)
		}
		k := keysOf(name)
		for _, key := range []string{k.lock, k.token, k.channel} {
			if tag := hashTag(key); tag != name {
				t.Fatalf("key %q has hash tag %q, want the name %q", key, tag, name)
			}
		}
		if k.lock == k.token || k.lock == k.channel || k.token == k.channel {
			t.Fatalf("keys collide: %+v", k)
		}
	})
}

// hashTag returns the part of key Redis Cluster hashes: the text between
// the first '{' and the next '}', if not empty, else the whole key.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}
