package redislease

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestReleasePublishesOnlyWhenSomeoneWaits(t *testing.T) {
	// A release publishes on the name's channel only when an AcquireWait
	// caller was refused during the grant; the waiter's mark ('+' after the
	// lock key's value) survives the holder's renewals.
	c, env := newTestClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := env.Name("notify")
	k := keysOf(name)
	sub := env.Client.Subscribe(ctx, k.channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	release(t, mustAcquire(t, c, name, 10*time.Second)) // nobody waits: no message

	holder := mustAcquire(t, c, name, time.Second) // renews every 333ms
	got := make(chan error, 1)
	go func() {
		l, err := c.AcquireWait(ctx, name, time.Second)
		if err == nil {
			release(t, l)
		}
		got <- err
	}()
	if v := waitMarked(t, env.Client, name); v != lockValueOf(holder)+"+" {
		t.Fatalf("lock key %q, want the holder's value %q marked by the waiter", v, lockValueOf(holder))
	}
	time.Sleep(1500 * time.Millisecond) // longer than the TTL: only renewals keep it
	if err := holder.Err(); err != nil {
		t.Fatalf("holder lost after the waiter's mark: %v", err)
	}
	release(t, holder)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Payload != lockValueOf(holder) {
		t.Fatalf("first release message %q, want the waited-for holder's %q (a release without waiters published)", msg.Payload, lockValueOf(holder))
	}
	if strings.HasSuffix(msg.Payload, "+") {
		t.Fatalf("payload %q carries the waiter mark", msg.Payload)
	}
}

func TestWaiterMarksOnlyFencekitValues(t *testing.T) {
	// A waiter's mark goes on a value fencekit wrote, once; a key someone
	// else wrote is left as it is.
	c, env := newTestClient(t, nil)
	bg := context.Background()
	for _, value := range []string{"abc", "", "12:not-hex", "12:abc+", "12:0123456789abcdef", "12:web-1/7:0123456789abcdef", "12:web-1/7:0123456789abcdef+"} {
		name := env.Name("mark")
		lock := keysOf(name).lock
		if err := env.Client.Set(bg, lock, value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		for range 2 { // a second waiter does not mark it twice
			ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
			if _, err := c.AcquireWait(ctx, name, time.Second); !isNotAcquired(err) {
				t.Fatalf("value %q: AcquireWait = %v, want a refusal", value, err)
			}
			cancel()
		}
		want := value
		if value == "12:0123456789abcdef" || value == "12:web-1/7:0123456789abcdef" {
			want += "+"
		}
		if got, _ := env.Client.Get(bg, lock).Result(); got != want {
			t.Errorf("value %q: lock key %q after two waiters, want %q", value, got, want)
		}
	}
}
