// Package playground is fencesim's interactive page: the simulator
// compiled to WebAssembly and one static page (HTML, CSS and JavaScript,
// no external assets, no network) whose controls rerun a scenario with
// fencing off and on as they move.
//
// [Run] is the page's one call into Go: it takes the page's URL query
// ("scenario=kleppmann&pause=12s&storage=claim") and returns both runs,
// drawn and summarized. The wasm entry point (package wasm, built with
// GOOS=js GOARCH=wasm) exposes it to JavaScript; tests call it natively to
// know what the browser must show. [Build] writes the folder that
// `make playground` publishes and `go run ./cmd/fenceplay` serves.
package playground
