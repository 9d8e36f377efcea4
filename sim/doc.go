// Package sim is fencekit's deterministic simulator of the fencing problem:
// clients that take a lease, work and write; a lease service with TTLs and
// monotonic tokens; and a storage that treats tokens in one of four ways
// ([Storage]): accepts everything, applies the write check alone, applies
// the write check and the claim ([fencetest.Store], hence [fence.Check]), or
// checks and then writes in two requests.
//
// A run is a discrete-event simulation on a virtual clock. Actions wait in
// a priority queue ordered by virtual time and then by the order they were
// scheduled, all randomness comes from one math/rand/v2 PCG seeded by
// [Config.Seed], nothing reads the wall clock and no goroutine runs, so the
// same [Config] always gives the same [Result], byte for byte in every
// output format. Faults are per client: stop-the-world pauses (the whole
// process, heartbeat included; work does not progress), crashes, and clock
// drift; messages take a random delay. A holder's lease ends, by its own
// clock, at the send time of its acquire or renew plus the TTL minus the
// drift margin, as in the lease package.
//
// Entry points:
//
//   - [Run] (or a reusable [Runner]) runs one [Config].
//   - [Scenarios] and [Lookup] give the hand-written scenarios: "kleppmann"
//     (Kleppmann's GC-pause timeline: token 33 pauses past its lease, 34
//     takes over, 33 writes late), "check-then-write", "crash", "heartbeat",
//     "pause-heartbeat" and "drift"; [Scenario.Run] runs one with [Params]
//     and [Scenario.Story] tells it with their numbers.
//   - [Explore] runs many random schedules ([ExploreParams]) once per
//     storage mode and tallies what went wrong; [ExploreSchedule] rebuilds
//     the schedule of one seed for replay. A schedule is drawn from a second
//     PCG stream of its seed, so the report depends on the seeds only, not
//     on the number of workers.
//   - [Result.Verdict] says safe, a write lost, or tokens went backwards;
//     [Result.Violation] checks the accepted writes with
//     [fencetest.VerifyHistory]; [Result.Lost], [Result.StaleAccepted] and
//     [Result.Downtime] say what went wrong and [Result.Summary] says it in
//     sentences.
//   - [NewRecorded] wraps events observed on real servers (cmd/fencereal) so
//     the same renderers can show them.
//
// Package sim/render prints results as a terminal timeline, JSON Lines, a
// self-contained HTML page or one SVG figure.
//
// Errors start with "sim: ". A run that exceeds its step bound, and a
// violation, name the seed ("failed for seed=N") so that it can be replayed.
package sim
