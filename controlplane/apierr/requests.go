package apierr

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Requests counts a listener's requests by method, route and status. Its
// handler and the forwarder in front of it (whose refusals never reach the
// handler) each ask for it, so the second asker gets the first's.
type Requests struct{ vec *prometheus.CounterVec }

// NewRequests registers the counter name in reg, or takes the one already
// registered there under it; nil reg: counted, not exported.
func NewRequests(reg prometheus.Registerer, name, help string) Requests {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"method", "route", "status"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err) // another collector under the name: a programming error
			}
			vec = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return Requests{vec: vec}
}

// Observe counts one request; the method is folded (MethodLabel).
func (r Requests) Observe(method, route string, status int) {
	r.vec.WithLabelValues(MethodLabel(method), route, strconv.Itoa(status)).Inc()
}
