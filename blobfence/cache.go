package blobfence

import (
	"container/list"
	"sync"
)

// defaultVersionCache is how many keys' versions a Store remembers unless
// [Options.VersionCache] says otherwise.
const defaultVersionCache = 1024

// versionCache remembers, per key, the last version the Store wrote or
// proved by a read, so that a Put of the same key can send If-Match with
// it and skip the read: one request. A remembered version that is out of
// date costs nothing but the refused PUT (412), after which the Put reads
// the key and decides again, as with [After]. It holds at most max keys,
// dropping the least recently used; nil (max < 0) remembers nothing.
type versionCache struct {
	mu    sync.Mutex
	max   int
	order *list.List               // front: most recently used key
	items map[string]*list.Element // key -> element holding a Version
}

func newVersionCache(max int) *versionCache {
	if max < 0 {
		return nil
	}
	if max == 0 {
		max = defaultVersionCache
	}
	return &versionCache{max: max, order: list.New(), items: map[string]*list.Element{}}
}

// get returns key's remembered version, or the zero Version.
func (c *versionCache) get(key string) Version {
	if c == nil {
		return Version{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return Version{}
	}
	c.order.MoveToFront(e)
	return e.Value.(Version)
}

// put remembers v for its key; a zero Version or a Create's object
// forgets the key.
func (c *versionCache) put(v Version) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[v.key]
	switch {
	case v.etag == "" || v.created:
		if ok {
			c.order.Remove(e)
			delete(c.items, v.key)
		}
	case ok:
		e.Value = v
		c.order.MoveToFront(e)
	default:
		c.items[v.key] = c.order.PushFront(v)
		if c.order.Len() > c.max {
			last := c.order.Back()
			c.order.Remove(last)
			delete(c.items, last.Value.(Version).key)
		}
	}
}

// forget drops key.
func (c *versionCache) forget(key string) { c.put(Version{key: key}) }
