// Package fencetest is the reference of a fenced storage: an in-memory
// store that enforces the fencing invariant, and a check of a recorded
// history of accepted writes. The simulator stores with it; tests compare
// the real adapters with both.
package fencetest

import (
	"fmt"
	"slices"
	"sync"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// Store is an in-memory reference store that enforces the fencing
// invariant for any number of resources. It is safe for concurrent use.
//
// It is what a fenced storage must behave like: the simulator uses it as its
// fenced storage, and the adapters' conformance tests compare their results
// with it. It keeps one value and the newest accepted token per resource.
type Store struct {
	mu   sync.Mutex
	data map[string]memEntry
}

type memEntry struct {
	tok   fence.Token
	value []byte
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{data: make(map[string]memEntry)} }

// Claim records tok as the newest token seen for resource, without writing a
// value, unless a newer token was already seen: then it returns a
// [*fence.StaleError] and changes nothing. It is how a new lease holder fences out
// older ones before it writes anything. A bad resource or token (see
// [valid.Write]) is an error matching [fence.ErrInvalid], and changes nothing.
func (s *Store) Claim(resource string, tok fence.Token) error {
	return s.write(resource, tok, func(e *memEntry) {})
}

// Put stores value for resource with token tok, unless a newer token was
// already seen: then it returns a [*fence.StaleError] and changes nothing. The
// store keeps its own copy of value. A bad resource or token is refused as
// by [Store.Claim].
func (s *Store) Put(resource string, tok fence.Token, value []byte) error {
	return s.write(resource, tok, func(e *memEntry) { e.value = slices.Clone(value) })
}

// write validates resource and tok, checks tok against resource's newest
// token and, when it may write, records tok and applies set.
func (s *Store) write(resource string, tok fence.Token, set func(*memEntry)) error {
	if err := valid.Write("resource", resource, tok); err != nil {
		return fmt.Errorf("fencetest: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.data[resource]
	if err := fence.Check(resource, tok, e.tok); err != nil {
		return err
	}
	e.tok = tok
	set(&e)
	s.data[resource] = e
	return nil
}

// Get returns a copy of resource's value and the newest token seen for it;
// a resource never written returns nil and 0.
func (s *Store) Get(resource string) ([]byte, fence.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.data[resource]
	return slices.Clone(e.value), e.tok
}

// Current returns the newest token seen for resource, 0 if none.
func (s *Store) Current(resource string) fence.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[resource].tok
}

// Resources returns the names of all resources seen, sorted.
func (s *Store) Resources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.data))
	for name := range s.data {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// VerifyHistory checks a history of accepted writes to one resource, in the
// order the storage accepted them, against the invariant: no accepted token
// is smaller than one accepted before it. It returns nil for a valid history
// and otherwise an error naming the first offending position and both tokens.
func VerifyHistory(resource string, accepted []fence.Token) error {
	var maxSeen fence.Token
	maxAt := -1
	for i, t := range accepted {
		if t < maxSeen {
			return fmt.Errorf("fencetest: history of %q violates the fencing invariant: write %d accepted token %s after write %d accepted token %s",
				resource, i, t, maxAt, maxSeen)
		}
		if t > maxSeen || maxAt < 0 {
			maxSeen, maxAt = t, i
		}
	}
	return nil
}
