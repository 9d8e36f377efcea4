// Package sim is fencekit's deterministic simulator of the fencing problem:
// clients that take a lease, work and write; a lease service with TTLs and
// monotonic tokens; and a storage that either checks tokens with the fence
// package ([fence.MemStore], hence [fence.Check]) or accepts everything.
//
// A run is a discrete-event simulation on a virtual clock. Actions wait in
// a priority queue ordered by virtual time and then by the order they were
// scheduled, all randomness comes from one math/rand/v2 PCG seeded by
// [Config.Seed], nothing reads the wall clock and no goroutine runs, so the
// same [Config] always gives the same [Result], byte for byte in every
// output format. Faults are per client: stop-the-world pauses (the whole
// process, heartbeat included), crashes, and clock drift; messages take a
// random delay.
//
// Entry points:
//
//   - [Run] (or a reusable [Runner]) runs one [Config].
//   - [Scenarios] and [Lookup] give the hand-written scenarios: "kleppmann"
//     (Kleppmann's GC-pause timeline: token 33 pauses past its TTL, 34 takes
//     over, 33 writes late), "crash", "heartbeat", "pause-heartbeat" and
//     "drift"; [Scenario.Run] runs one with [Params].
//   - [Explore] runs many random schedules ([ExploreParams]) with fencing off
//     and on and tallies safety violations; [ExploreSchedule] rebuilds the
//     schedule of one seed for replay. A schedule is drawn from a second
//     PCG stream of its seed, so the report depends on the seeds only, not
//     on the number of workers.
//   - [WriteTimeline], [WriteJSON] and [WriteHTML] print results as a terminal
//     timeline (runs side by side), JSON Lines, or a self-contained HTML page
//     with one SVG per run drawn like Kleppmann's figure.
//   - [Result.Violation] checks the accepted writes with [fence.VerifyHistory];
//     [Result.Lost], [Result.StaleAccepted] and [Result.Downtime] say what
//     went wrong and [Result.Summary] says it in sentences.
//   - [NewRecorded] wraps events observed on real servers (fencesim real) so
//     the same writers can show them.
//
// Errors start with "sim: ". A run that exceeds its step bound, and a
// violation, name the seed ("failed for seed=N") so that it can be replayed.
package sim
