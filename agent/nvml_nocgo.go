//go:build !cgo

package agent

// DiscoverSystem returns this machine's capacity. go-nvml needs cgo, so a
// binary built with CGO_ENABLED=0 cannot read NVML: it reports a CPU node
// whose Note says so. The error joins what could not be read about the host.
func DiscoverSystem() (Capacity, error) {
	c, errs := discoverHost(systemHost)
	c.Note = noteNoCgo
	return finish(c, errs)
}

// SampleGPUs finds no GPUs without cgo (see DiscoverSystem).
func SampleGPUs() ([]GPU, error) { return nil, nil }
