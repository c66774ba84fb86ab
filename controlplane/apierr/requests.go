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
	return Requests{vec: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"method", "route", "status"}))}
}

// Register registers c in reg and returns it, or returns the collector of
// the same description already registered there (a listener's handler
// and the forwarder in front of it, or a second handler on one registry,
// share their series); nil reg: c, counted but not exported.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err) // another collector under the name: a programming error
		}
		return are.ExistingCollector.(C)
	}
	return c
}

// Observe counts one request; the method is folded (MethodLabel).
func (r Requests) Observe(method, route string, status int) {
	r.vec.WithLabelValues(MethodLabel(method), route, strconv.Itoa(status)).Inc()
}
