//go:build js && wasm

// Command wasm is the playground's WebAssembly entry point. It defines one
// JavaScript function, fencesimRun(query), which returns the JSON of
// [playground.Run] for the query, or {"error": "..."}; then it waits
// forever so that the page can keep calling it.
package main

import (
	"encoding/json"
	"syscall/js"

	"github.com/fencekit/fencekit/internal/playground"
)

func main() {
	js.Global().Set("fencesimRun", js.FuncOf(func(_ js.Value, args []js.Value) any {
		query := ""
		if len(args) > 0 {
			query = args[0].String()
		}
		return runJSON(query)
	}))
	js.Global().Call("dispatchEvent", js.Global().Get("Event").New("fencesim-ready"))
	select {}
}

func runJSON(query string) string {
	var out any
	resp, err := playground.Run(query)
	if err != nil {
		out = map[string]string{"error": err.Error()}
	} else {
		out = resp
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return string(b)
}
