package main

import (
	"encoding/json"
	"io"

	"github.com/fencekit/fencekit/sim"
)

// jsonReport is explore -json's output: one object for one point of the
// schedule distribution, the same counts as the text report.
type jsonReport struct {
	Runs        int         `json:"runs"`
	Seed        uint64      `json:"seed"`
	Clients     int         `json:"clients"`
	Jobs        int         `json:"jobs"`
	Writes      int         `json:"writes"`
	TTL         string      `json:"ttl"`
	Heartbeat   string      `json:"heartbeat"`
	Work        string      `json:"work"`
	DelayMax    string      `json:"delay_max"`
	PauseProb   float64     `json:"pause_prob"`
	PauseMax    string      `json:"pause_max"`
	CrashProb   float64     `json:"crash_prob"`
	DriftMax    float64     `json:"drift_max"`
	LongPauses  int         `json:"long_pauses"`
	Warnings    []string    `json:"warnings"`
	Tallies     []jsonTally `json:"tallies"`
	FencingSafe bool        `json:"fencing_safe"` // claim ran and lost nothing, tokens in order
}

type jsonTally struct {
	Storage         string   `json:"storage"`
	TokensBackwards int      `json:"tokens_backwards"`
	ViolatingSeeds  []uint64 `json:"violating_seeds"`
	LostRuns        int      `json:"lost_update_runs"`
	LateRuns        int      `json:"late_write_accepted_runs"`
	WritesDecided   int      `json:"writes_decided"`
	Rejected        int      `json:"rejected"`
	DowntimeRuns    int      `json:"downtime_runs"`
	Downtime        string   `json:"downtime_total"`
	CutRuns         int      `json:"cut_runs"`
}

// writeReportJSON writes rep as one indented JSON object; show bounds the
// violating seeds listed per storage mode, as in the text report.
func writeReportJSON(w io.Writer, rep *sim.ExploreReport, show int) error {
	p := rep.Params
	out := jsonReport{Runs: p.Runs, Seed: p.Seed, Clients: p.Clients, Jobs: p.Jobs, Writes: p.Writes,
		TTL: sim.FormatTime(p.TTL), Heartbeat: sim.FormatTime(p.Heartbeat), Work: sim.FormatTime(p.Work),
		DelayMax: sim.FormatTime(p.DelayMax), PauseProb: p.PauseProb, PauseMax: sim.FormatTime(p.PauseMax),
		CrashProb: p.CrashProb, DriftMax: p.DriftMax, LongPauses: rep.LongPauses, Warnings: p.Warnings()}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, t := range rep.Tallies {
		seeds := t.Seeds[:min(show, len(t.Seeds))]
		if seeds == nil {
			seeds = []uint64{}
		}
		out.Tallies = append(out.Tallies, jsonTally{Storage: t.Storage.String(), TokensBackwards: t.Violations,
			ViolatingSeeds: seeds, LostRuns: t.LostRuns, LateRuns: t.StaleRuns, WritesDecided: t.Writes,
			Rejected: t.Rejected, DowntimeRuns: t.DowntimeRuns, Downtime: sim.FormatTime(t.Downtime), CutRuns: t.CutRuns})
	}
	if on := rep.Tally(sim.StorageClaim); on != nil {
		out.FencingSafe = on.Violations == 0 && on.LostRuns == 0
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
