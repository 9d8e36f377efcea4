package fence

import (
	"fmt"
	"slices"
	"sync"
)

// MemStore is an in-memory reference store that enforces the fencing
// invariant for any number of resources. It is safe for concurrent use.
//
// It is what a fenced storage must behave like: the simulator uses it as its
// fenced storage, and the adapters' conformance tests compare their results
// with it. It keeps one value and the newest accepted token per resource.
type MemStore struct {
	mu   sync.Mutex
	data map[string]memEntry
}

type memEntry struct {
	tok   Token
	value []byte
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{data: make(map[string]memEntry)} }

// Claim records tok as the newest token seen for resource, without writing a
// value, unless a newer token was already seen: then it returns a
// [*StaleError] and changes nothing. It is how a new lease holder fences out
// older ones before it writes anything. A bad resource or token (see
// [ValidateWrite]) is an error matching [ErrInvalid], and changes nothing.
func (s *MemStore) Claim(resource string, tok Token) error {
	if err := ValidateWrite("resource", resource, tok); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.data[resource]
	if err := Check(resource, tok, e.tok); err != nil {
		return err
	}
	e.tok = tok
	s.data[resource] = e
	return nil
}

// Put stores value for resource with token tok, unless a newer token was
// already seen: then it returns a [*StaleError] and changes nothing. The
// store keeps its own copy of value. A bad resource or token is refused as
// by [MemStore.Claim].
func (s *MemStore) Put(resource string, tok Token, value []byte) error {
	if err := ValidateWrite("resource", resource, tok); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.data[resource]
	if err := Check(resource, tok, e.tok); err != nil {
		return err
	}
	s.data[resource] = memEntry{tok: tok, value: slices.Clone(value)}
	return nil
}

// Get returns a copy of resource's value and the newest token seen for it;
// a resource never written returns nil and 0.
func (s *MemStore) Get(resource string) ([]byte, Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.data[resource]
	return slices.Clone(e.value), e.tok
}

// Current returns the newest token seen for resource, 0 if none.
func (s *MemStore) Current(resource string) Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[resource].tok
}

// Resources returns the names of all resources seen, sorted.
func (s *MemStore) Resources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.data))
	for name := range s.data {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
