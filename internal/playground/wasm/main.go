//go:build js && wasm

// Command wasm is the playground's WebAssembly entry point. It defines two
// JavaScript functions: fencesimRun(query, width) returns the JSON of
// [playground.Run] for the query, its figures width pixels wide, and fencesimMap(query) returns
// {"svg": ...}, the violation map of [playground.Map] for the query's
// heartbeat/TTL; both return {"error": "..."} for a bad query. Then it
// fires the "fencesim-ready" event and waits forever, so that the page can
// keep calling them.
package main

import (
	"encoding/json"
	"syscall/js"

	"github.com/fencekit/fencekit/internal/playground"
)

func main() {
	js.Global().Set("fencesimRun", js.FuncOf(func(_ js.Value, args []js.Value) any {
		query, width := "", 0
		if len(args) > 0 {
			query = args[0].String()
		}
		if len(args) > 1 && args[1].Type() == js.TypeNumber {
			width = args[1].Int()
		}
		return runJSON(query, width)
	}))
	js.Global().Set("fencesimMap", js.FuncOf(func(_ js.Value, args []js.Value) any {
		query := ""
		if len(args) > 0 {
			query = args[0].String()
		}
		svg, err := playground.Map(query)
		if err != nil {
			return marshal(map[string]string{"error": err.Error()})
		}
		return marshal(map[string]string{"svg": svg})
	}))
	js.Global().Call("dispatchEvent", js.Global().Get("Event").New("fencesim-ready"))
	select {}
}

func runJSON(query string, width int) string {
	resp, err := playground.Run(query, width)
	if err != nil {
		return marshal(map[string]string{"error": err.Error()})
	}
	return marshal(resp)
}

// marshal returns v as JSON, or {"error": ...} if it cannot.
func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return string(b)
}
