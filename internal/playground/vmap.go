package playground

import (
	"bytes"
	"context"
	"fmt"

	"github.com/fencekit/fencekit/internal/sweep"
)

// MapRuns is the number of schedules per point of the map the page draws
// on request: a fifth of the docs' map, about a second in a browser.
const MapRuns = 200

// Map draws the violation map (see [sweep.WriteSVG]) for the query's
// heartbeat/TTL ratio: the docs' grid with MapRuns schedules per point.
// Errors name the invalid query.
func Map(raw string) (string, error) {
	q, err := ParseQuery(raw)
	if err != nil {
		return "", err
	}
	g := sweep.DefaultGrid()
	g.Base.Runs = MapRuns
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
