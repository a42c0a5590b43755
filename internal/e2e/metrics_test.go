package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/deploy/k8s"
	"github.com/fibfleet/fibfleet/internal/lab"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// targetLabels are added by Prometheus and the chart's ServiceMonitor, not by the
// node: the dashboard may select on them.
var targetLabels = []string{"node", "instance", "job", "pod", "namespace"}

// testMetrics scrapes a fleet node that has upstreams (n1: BIRD, 3 IPv4 and 2 IPv6
// routes), parses the exposition with Prometheus's text parser, and checks that
// every series the Grafana dashboard queries is exported with the labels it selects
// on, and the values of the metrics the chart's readiness and dashboard rely on.
func testMetrics(t *testing.T, fl *lab.Fleet, flushes uint32) {
	n1, n2 := fl.Nodes[0], fl.Nodes[1]
	fams := scrape(t, n1)
	qs, err := k8s.DashboardQueries()
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, q := range qs {
		for _, s := range q.Selectors {
			f := fams[s.Metric]
			if f == nil {
				t.Errorf("panel %q: %s is not exported by the node (query %s)", q.Panel, s.Metric, q.Expr)
				continue
			}
			for _, l := range s.Labels {
				if !slices.Contains(targetLabels, l) && !hasLabel(f, l) {
					t.Errorf("panel %q: %s has no label %q (query %s)", q.Panel, s.Metric, l, q.Expr)
				}
			}
			checked++
		}
	}
	// The dashboard's node variable lists fibfleet_build_info's node label.
	if fams["fibfleet_build_info"] == nil {
		t.Error("fibfleet_build_info is not exported (the dashboard's node variable reads it)")
	}
	t.Logf("%d metric families exported; %d selectors of %d dashboard queries found in them", len(fams), checked, len(qs))

	byLabel := func(name, label string) map[string]float64 {
		out := map[string]float64{}
		if f := fams[name]; f != nil {
			for _, m := range f.Metric {
				for _, lp := range m.Label {
					if lp.GetName() == label {
						out[lp.GetValue()] += value(m)
					}
				}
				if label == "" {
					out[""] += value(m)
				}
			}
		}
		return out
	}
	// Received counts before the import rules: the refused routes too, the
	// RPKI-invalid one (lab.FleetInvalid) among them.
	if got := byLabel("fibfleet_bgp_received_prefixes", "family"); got["ipv4"] != float64(3+len(lab.FleetRefused)+1) || got["ipv6"] != 2 {
		t.Errorf("n1's upstream prefixes by family %v, want BIRD's ipv4 %d (3, the refused ones and the RPKI-invalid one), ipv6 2", got, 3+len(lab.FleetRefused)+1)
	}
	ep := byLabel("fibfleet_cluster_epoch", "scope")
	if ep["fleet"] < float64(flushes) || byLabel("fibfleet_cache_epoch", "")[""] != ep["fleet"]+ep["node"] {
		t.Errorf("epochs %v, dataplane %v: want the fleet's at least %d and the dataplane's their sum", ep, byLabel("fibfleet_cache_epoch", ""), flushes)
	}
	if r := byLabel("fibfleet_ready", "")[""]; r != 1 {
		t.Errorf("fibfleet_ready %v on n1, which holds its upstream's table", r)
	}
	if h := fams["fibfleet_cluster_gossip_health_score"]; h == nil || value(h.Metric[0]) != 0 {
		t.Errorf("gossip health score %v, want 0 in a healthy fleet", h)
	}

	// Readiness, as the chart's probe sees it.
	for n, want := range map[*lab.FleetNode]string{n1: "ready: holding the tables of 2 of 2 upstreams", n2: "ready: no upstream neighbours configured"} {
		b, err := n.Get("/readyz")
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s /readyz: %q (%v), want %q", n.Name, b, err, want)
		}
	}
}

func scrape(t *testing.T, n *lab.FleetNode) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := n.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s /metrics does not parse: %v", n.Name, err)
	}
	return fams
}

func hasLabel(f *dto.MetricFamily, name string) bool {
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == name {
				return true
			}
		}
	}
	return false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	panic(fmt.Sprintf("metric %v: not a gauge, counter or untyped", m))
}
