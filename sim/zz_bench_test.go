package sim

import (
	"context"
	"testing"
)

func BenchmarkZZ(b *testing.B) {
	p := DefaultExploreParams()
	p.Runs = b.N
	Explore(context.Background(), p, nil)
}
