package gcstat_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/internal/gcstat"
)

// BenchmarkPointerFields measures what one live object of about 720 bytes
// costs a full collection, by how many of its fields hold pointers and how
// many of those are set: the shape of a queued video (about 37 fields with
// pointers) against fewer. It is why fewer objects per queued video moved
// the collector little (docs/benchmarks.md, fifteenth session). Reports
// gc-ns/object: the collector's CPU per cycle over the objects, the same
// measure with none of them taken away.
func BenchmarkPointerFields(b *testing.B) {
	const n = 100_000
	for _, tc := range []struct {
		name string
		make func() any
	}{
		{"no-pointers", func() any { return new(struct{ b [90]int64 }) }},
		{"10-string-fields", func() any {
			return new(struct {
				s [10]string
				b [70]int64
			})
		}},
		{"40-string-fields-nil", func() any {
			return new(struct {
				s [40]string
				b [10]int64
			})
		}},
		{"40-string-fields-12-set", func() any {
			v := new(struct {
				s [40]string
				b [10]int64
			})
			one := strings.Repeat("x", 120) // a decoded command's strings share one allocation
			for i := range 12 {
				v.s[i] = one[i*10 : i*10+8]
			}
			return v
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				base := gcstat.PerCycle()
				live := make([]any, n)
				for i := range live {
					live[i] = tc.make()
				}
				per = (gcstat.PerCycle() - base) / n
				runtime.KeepAlive(live)
			}
			b.ReportMetric(per*1e9, "gc-ns/object")
		})
	}
}
