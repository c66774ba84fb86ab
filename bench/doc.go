// Package bench holds vidfarm's capacity-planning tools and owns their
// reports:
//
//   - the farm simulator (sim*.go): a discrete-event simulation driving the
//     production scheduler with simulated time, its SLO, CSV and SVG
//     reports, and the fleet-size sweep;
//   - the open-loop load generator (load*.go): creates at a fixed rate
//     against a live farm, each video polled to its end, latency measured
//     from the intended send time;
//   - the closed-loop create benchmark (create.go): how fast a live control
//     plane accepts POST /v1/videos.
//
// The generators speak plain HTTP and import nothing of the control plane,
// so they measure exactly what a client sees.
package bench
