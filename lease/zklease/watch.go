package zklease

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/lease"
)

// Watch queues the waiter: it creates an ephemeral sequential ticket under
// the name's wait node (one round trip, more for a name's first waiter).
// Its Wait watches only the ticket just before its own, so that a release
// wakes one waiter, not all of them: the first in line watches the holder
// node. Close deletes the ticket, which moves the next waiter up.
func (b *backend) Watch(ctx context.Context, name string) (lease.Watch, error) {
	w := &watch{b: b, dir: b.waitDir(name), holderDir: b.lockDir(name)}
	if err := w.enqueue(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

type watch struct {
	b         *backend
	dir       string // the name's wait node
	holderDir string // the name's lock node
	ticket    string // this waiter's ticket, a child of dir ("" when it must be made again)

	// A watch set by an earlier Wait whose ctx ended first: go-zookeeper
	// keeps it until it fires, so the next Wait waits on it again.
	pending  <-chan zk.Event
	onHolder bool // pending watches the holder node, not a ticket
}

// enqueue creates the ticket (and the wait node, the first time). A
// ticket whose create reply was lost is found by its random name and
// deleted: it would stall the line behind it.
func (w *watch) enqueue(ctx context.Context) error {
	nonce, err := newNonce()
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		path, err := call(ctx, w.b, func() (string, error) {
			return w.b.conn.Create(w.dir+"/w-"+nonce+"-", nil, zk.FlagEphemeralSequential, acl)
		}, func(path string, err error) {
			switch {
			case err == nil:
				w.b.retry(func() error { return w.b.conn.Delete(path, -1) })
			case unknownOutcome(err):
				w.b.sweep(w.dir, nonce)
			}
		})
		if unknownOutcome(err) {
			w.b.bg.Go(func() { w.b.sweep(w.dir, nonce) })
		}
		if errors.Is(err, zk.ErrNoNode) && attempt == 0 {
			if err := w.b.makeDirs(ctx, w.dir); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("zklease: queue a waiter: %w", err)
		}
		w.ticket = path
		return nil
	}
}

// Wait returns when the holder node it watches (first in line) is deleted
// or is not there, or when ctx ends. A ticket ahead that goes away moves
// this waiter up without returning. After the session expired (the ticket
// is gone), it queues again.
func (w *watch) Wait(ctx context.Context) error {
	for {
		if w.pending != nil {
			select {
			case <-w.pending:
				w.pending = nil
				if w.onHolder {
					return nil
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if w.ticket == "" {
			if err := w.enqueue(ctx); err != nil {
				return err
			}
		}
		target, onHolder, err := w.ahead(ctx)
		if err != nil {
			return err
		}
		if target == "" {
			return nil // first in line and nobody holds it: try now
		}
		ch, err := call(ctx, w.b, func() (<-chan zk.Event, error) {
			_, _, ch, err := w.b.conn.GetW(target)
			return ch, err
		}, nil) // a watch set after ctx ended fires unread: its channel has room
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, zk.ErrNoNode) {
			if onHolder {
				return nil
			}
			continue // the ticket ahead went away meanwhile: look again
		}
		if err != nil {
			return err
		}
		w.pending, w.onHolder = ch, onHolder
	}
}

// ahead returns the node this waiter must watch: the ticket just before its
// own, or, first in line, the holder node ("" when there is none).
func (w *watch) ahead(ctx context.Context) (path string, onHolder bool, err error) {
	kids, err := w.children(ctx, w.dir)
	if err != nil {
		return "", false, err
	}
	mine := strings.TrimPrefix(w.ticket, w.dir+"/")
	i, found := slices.BinarySearchFunc(kids, mine, bySeq)
	if !found {
		w.ticket = "" // the session expired: queue again next time
		return "", false, nil
	}
	if i > 0 {
		return w.dir + "/" + kids[i-1], false, nil
	}
	holders, err := w.children(ctx, w.holderDir)
	if err != nil || len(holders) == 0 {
		return "", true, err
	}
	return w.holderDir + "/" + holders[0], true, nil
}

// children lists path's children in sequence order ([]: path is gone).
func (w *watch) children(ctx context.Context, path string) ([]string, error) {
	kids, err := call(ctx, w.b, func() ([]string, error) {
		kids, _, err := w.b.conn.Children(path)
		return kids, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.SortFunc(kids, bySeq)
	return kids, err
}

// bySeq orders sequential nodes by the 10-digit counter ZooKeeper appends.
func bySeq(a, b string) int { return cmp.Compare(seq(a), seq(b)) }

func seq(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

// Close deletes the ticket, in the background (retried while the
// connection is down, joined by the backend's Close): the next waiter
// moves up when it is gone.
func (w *watch) Close() error {
	if ticket := w.ticket; ticket != "" {
		w.b.bg.Go(func() { w.b.retry(func() error { return w.b.conn.Delete(ticket, -1) }) })
	}
	return nil
}
