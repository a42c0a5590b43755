package main

import (
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsDescribed: every series the node declares has its description (a nil
// one makes the registry panic at start), and Describe sends each.
func TestMetricsDescribed(t *testing.T) {
	m := newMetrics(nil, nil, nil, nil, nil, nil, nil, nil)
	v := reflect.ValueOf(m).Elem()
	descType := reflect.TypeOf((*prometheus.Desc)(nil))
	declared := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Type() != descType {
			continue
		}
		declared++
		if f.IsNil() {
			t.Errorf("metrics.%s has no description", v.Type().Field(i).Name)
		}
	}
	ch := make(chan *prometheus.Desc, 256)
	m.Describe(ch)
	close(ch)
	sent := 0
	for d := range ch {
		if d == nil {
			t.Error("Describe sent a nil description")
		}
		sent++
	}
	// The three counters describe themselves beside the declared descriptions.
	if sent != declared+3 {
		t.Errorf("Describe sent %d descriptions, want the %d declared and the 3 counters'", sent, declared)
	}
	if err := prometheus.NewRegistry().Register(m); err != nil {
		t.Errorf("register: %v", err)
	}
}
