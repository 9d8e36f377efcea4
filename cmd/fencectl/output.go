package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// output prints a command's result as text or, with -json, as JSON.
type output struct {
	w    io.Writer
	errs io.Writer // warnings that do not end the command
	json bool
}

// value prints v as one JSON document, or text as it is.
func (o *output) value(v any, text string) error {
	if o.json {
		return o.encode(v)
	}
	_, err := io.WriteString(o.w, text)
	return err
}

// encode prints v as one line of JSON (watch prints a stream of them).
func (o *output) encode(v any) error {
	return json.NewEncoder(o.w).Encode(v)
}

// table prints rows under header, in aligned columns.
func (o *output) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// ms returns d in whole milliseconds, for JSON.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// remaining shows a lease's remaining TTL: "-" when not held, "no expiry"
// for a key without TTL.
func remaining(held bool, d time.Duration) string {
	switch {
	case !held:
		return "-"
	case d < 0:
		return "no expiry"
	}
	return d.Round(time.Millisecond).String()
}
