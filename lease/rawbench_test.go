package lease

import (
	"context"
	"testing"
	"time"
)

func BenchmarkRawScripts(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	c := New(e.rdb, nil)
	k := c.keys("raw")
	release(b, mustAcquire(b, c, "raw", time.Second))
	b.Run("scripts", func(b *testing.B) {
		e.measure(b, func(b *testing.B) {
			for b.Loop() {
				res, err := acquireScript.Run(ctx, e.rdb, []string{k.lock, k.token}, 60000, "abc").Slice()
				if err != nil {
					b.Fatal(err)
				}
				val := res[1].(string) + ":abc"
				if _, err := releaseScript.Run(ctx, e.rdb, []string{k.lock}, val, k.channel).Int64(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
