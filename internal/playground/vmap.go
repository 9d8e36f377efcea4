package playground

import (
	"bytes"
	"context"
	"fmt"

	"github.com/fencekit/fencekit/internal/sweep"
)

// MapRuns is the number of schedules per point of the map the page draws
// on request, at every 0.2 TTL of pause instead of the docs' 0.1: 3,520
// runs, a twentieth of the docs' map, under a second in a browser.
const MapRuns = 80

// Map draws the violation map (see [sweep.WriteSVG]) for the query's
// heartbeat/TTL ratio: the docs' storage modes and pause range, with
// MapRuns schedules per point. Errors name the invalid query.
func Map(raw string) (string, error) {
	q, err := ParseQuery(raw)
	if err != nil {
		return "", err
	}
	g := sweep.DefaultGrid()
	g.Base.Runs = MapRuns
	g.Pause = nil
	for i := 0; i <= 10; i++ {
		g.Pause = append(g.Pause, float64(i)/5)
	}
	g.Heartbeat = []float64{float64(q.Params.Heartbeat) / float64(q.Params.TTL)}
	rows, err := sweep.Run(context.Background(), g, nil)
	if err != nil {
		return "", fmt.Errorf("playground: %w", err)
	}
	var b bytes.Buffer
	if err := sweep.WriteSVG(&b, rows); err != nil {
		return "", fmt.Errorf("playground: %w", err)
	}
	return b.String(), nil
}
