package sweep

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
)

// csvHeader names WriteCSV's columns.
var csvHeader = []string{"pause_ttl", "heartbeat_ttl", "drift", "storage", "runs",
	"safe", "late_write_accepted", "lost_update", "tokens_backwards", "writes", "rejected"}

// WriteCSV writes rows as CSV with a header line; ratios as decimals,
// counts as whole numbers of runs (divide by runs for rates).
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	n := strconv.Itoa
	for _, r := range rows {
		rec := []string{f(r.PauseRatio), f(r.HeartbeatRatio), f(r.Drift), r.Storage, n(r.Runs),
			n(r.Safe), n(r.Late), n(r.Lost), n(r.Backwards), n(r.Writes), n(r.Rejected)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes rows as one indented JSON array.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rows == nil {
		rows = []Row{}
	}
	return enc.Encode(rows)
}
