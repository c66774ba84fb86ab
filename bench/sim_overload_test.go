package bench

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOverloadWarning: when more than 1% of the videos never started, the
// table says so above the percentiles, which cover started videos only,
// and the JSON has an overload field; a farm that keeps up has neither.
func TestOverloadWarning(t *testing.T) {
	fleet, wl := loadExamples(t)
	small := cloneFleet(fleet)
	small.Groups = small.Groups[:1]
	small.Groups[0].Count = 1
	manual := cloneWorkload(wl)
	manual.ManualShare, manual.Auto = 1, nil
	cases := []struct {
		name       string
		fleet      Fleet
		wl         Workload
		repl       int
		overloaded bool
	}{
		{"keeps up", fleet, wl, 1, false},
		{"keeps up, replicated", fleet, wl, 3, false},
		{"one node for the example's traffic", small, manual, 1, true},
		{"one node, replicated", small, manual, 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Simulate(tc.fleet, tc.wl, SimConfig{Hours: 6, Seed: 1, Replications: tc.repl})
			if err != nil {
				t.Fatal(err)
			}
			table := rep.String()
			js, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(table, "WARNING: the farm is overloaded: ")
			if warned != tc.overloaded || (rep.Overload != nil) != tc.overloaded || strings.Contains(string(js), `"overload":`) != tc.overloaded {
				t.Fatalf("overloaded %v: warned %v, Overload %+v, JSON %.300s\n%s", tc.overloaded, warned, rep.Overload, js, table)
			}
			if !tc.overloaded {
				return
			}
			if o := rep.Overload; o.Share <= overloadShare || o.Share > 1 || o.NotStarted < o.Share*rep.Submitted*0.999 || o.NotStarted > rep.InFlight {
				t.Fatalf("overload %+v with %v submitted and %v in flight", o, rep.Submitted, rep.InFlight)
			}
			if !strings.Contains(table, "cover started videos only") || strings.Index(table, "WARNING") > strings.Index(table, "p95") {
				t.Fatalf("the warning does not say what the percentiles cover, or comes after them:\n%s", table)
			}
		})
	}
}
