package render

import (
	"encoding/json"
	"io"

	"github.com/fencekit/fencekit/sim"
)

// jsonEvent is the JSON form of an [sim.Event]: names instead of indexes.
type jsonEvent struct {
	Run     int    `json:"run"`
	Fencing bool   `json:"fencing"`
	Storage string `json:"storage"`
	Seed    uint64 `json:"seed"`
	T       string `json:"t"`
	TNs     int64  `json:"t_ns"`
	SentNs  int64  `json:"sent_ns"`
	Kind    string `json:"kind"`
	Actor   string `json:"actor"`
	Client  string `json:"client,omitempty"`
	Token   uint64 `json:"token,omitempty"`
	Other   uint64 `json:"other,omitempty"`
	Write   string `json:"write,omitempty"`
	DurNs   int64  `json:"dur_ns,omitempty"`
}

// jsonSummary closes each run in the JSON stream.
type jsonSummary struct {
	Run       int      `json:"run"`
	Fencing   bool     `json:"fencing"`
	Storage   string   `json:"storage"`
	Seed      uint64   `json:"seed"`
	Kind      string   `json:"kind"` // always "summary"
	TTLNs     int64    `json:"ttl_ns"`
	HeartNs   int64    `json:"heartbeat_ns"`
	Final     []string `json:"final"`
	Lost      []string `json:"lost"`
	Stale     []string `json:"stale_accepted"`
	Verdict   string   `json:"verdict"` // "safe", "a write lost" or "tokens went backwards"
	Violation string   `json:"violation,omitempty"`
	Cut       bool     `json:"cut,omitempty"` // stopped at the horizon with actions pending
	Summary   []string `json:"summary"`
}

// JSON writes the runs' events as JSON Lines: one object per event,
// in order, then one "summary" object per run. Each object names its run
// (0, 1, ...), whether fencing was on, and the seed. Times are virtual
// nanoseconds since the start of the run.
func JSON(w io.Writer, runs ...*sim.Result) error {
	enc := json.NewEncoder(w)
	for i, r := range runs {
		labels := r.WriteLabels()
		for _, e := range r.Events {
			je := jsonEvent{Run: i, Fencing: r.Storage.Fenced(), Storage: r.Storage.String(), Seed: r.Seed, T: sim.FormatTime(e.At), TNs: int64(e.At),
				SentNs: int64(e.Sent), Kind: e.Kind.String(), Actor: e.Kind.Actor(),
				Token: uint64(e.Token), Other: uint64(e.Other), DurNs: int64(e.Dur)}
			if e.Client >= 0 {
				je.Client = r.Clients[e.Client]
			}
			if e.Write >= 0 {
				je.Write = labels[e.Write]
			}
			if err := enc.Encode(je); err != nil {
				return err
			}
		}
		pick := func(ids []int) []string {
			out := make([]string, len(ids))
			for j, id := range ids {
				out[j] = labels[id]
			}
			return out
		}
		s := jsonSummary{Run: i, Fencing: r.Storage.Fenced(), Storage: r.Storage.String(), Seed: r.Seed, Kind: "summary", TTLNs: int64(r.TTL),
			HeartNs: int64(r.Heartbeat), Final: pick(r.Final), Lost: pick(r.Lost()), Stale: pick(r.StaleAccepted()),
			Summary: r.Summary(), Cut: r.Cut, Verdict: r.Verdict().String()}
		if err := r.Violation(); err != nil {
			s.Violation = err.Error()
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return nil
}
