// Package bench holds vidfarm's capacity-planning tools. This file set has the
// create-load generator: a closed loop of concurrent clients creating videos
// through the public API of a live control plane and reporting throughput and
// latency percentiles. It speaks plain HTTP and imports nothing of the control
// plane, so it measures exactly what a client sees.
package bench
