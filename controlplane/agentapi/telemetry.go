package agentapi

import (
	"fmt"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/telemetry"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// checkTelemetry checks a heartbeat's GPU samples against the GPUs node
// registered (wire.GPUSample.Check, one sample per registered GPU id) and
// returns them as the telemetry store keeps them: nil when the heartbeat
// carries none. It runs before the heartbeat is applied, so a refused
// heartbeat changes nothing.
func (s *server) checkTelemetry(nodeID string, samples []wire.GPUSample) (map[string]telemetry.GPU, *apierr.Error) {
	if len(samples) == 0 {
		return nil, nil
	}
	if len(samples) > maxGPUs {
		return nil, invalid(fmt.Sprintf("at most %d GPU samples per heartbeat", maxGPUs)).With("field", "gpus")
	}
	total := map[string]float64{}
	if info, ok := s.fsm.NodeInfo(nodeID); ok {
		for _, g := range info.GPUs {
			total[g.ID] = g.MemoryTotalGB
		}
	}
	out := make(map[string]telemetry.GPU, len(samples))
	for i, g := range samples {
		field := fmt.Sprintf("gpus[%d]", i)
		memTotal, ok := total[g.ID]
		if !ok {
			return nil, invalid(fmt.Sprintf("GPU %q is not one this node registered: send samples only for the ids of capacity.gpus (register again if the GPUs changed)", g.ID)).With("field", field+".id")
		}
		if _, dup := out[g.ID]; dup {
			return nil, invalid("GPU "+g.ID+" is sampled twice").With("field", field+".id")
		}
		if err := g.Check(memTotal); err != nil {
			return nil, invalid(err.Error()).With("field", field)
		}
		out[g.ID] = telemetry.GPU{MemoryUsedGB: g.MemoryUsedGB, UtilizationPercent: g.UtilizationPercent,
			TemperatureC: g.TemperatureC, PowerW: g.PowerW}
	}
	return out, nil
}
