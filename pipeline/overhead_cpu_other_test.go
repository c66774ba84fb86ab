//go:build !unix

package pipeline

import "time"

// childCPU is not measured here: the cpu-ms metric reads 0.
func childCPU() time.Duration { return 0 }
