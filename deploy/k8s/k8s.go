// Package k8s holds fibfleet's Kubernetes deployment: the Helm chart (fibfleet/),
// its example values (examples/), the container image's Dockerfile and the Grafana
// dashboard the chart ships. The Go here only reads them for tests: the dashboard's
// queries, so a test against a running node can check every metric they use exists.
package k8s

import (
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Files are the chart, the examples and the Dockerfile, as committed.
//
//go:embed all:fibfleet examples Dockerfile
var Files embed.FS

// NodeCapabilities are the only capabilities the chart gives the node container
// (it drops every other one): loading the XDP program and its maps (BPF, PERFMON),
// attaching it and writing routes and neighbours (NET_ADMIN), listening on BGP's
// port 179 (NET_BIND_SERVICE). The walking-skeleton test runs a node with only these.
var NodeCapabilities = []string{"BPF", "NET_ADMIN", "NET_BIND_SERVICE", "PERFMON"}

// DashboardPath is the dashboard inside Files (the chart ships it as a ConfigMap).
const DashboardPath = "fibfleet/dashboards/fibfleet.json"

// Query is one PromQL expression of the dashboard and the series it selects.
type Query struct {
	Panel string
	Expr  string
	// Selectors are its vector selectors: a metric name and the label names it
	// matches on.
	Selectors []Selector
}

// Selector is one vector selector of a query.
type Selector struct {
	Metric string
	Labels []string
}

// grafanaVars are the dashboard's variables with values PromQL parses: Grafana
// substitutes them before Prometheus sees a query.
var grafanaVars = regexp.MustCompile(`\$\{?[a-z_]+\}?`)

// DashboardQueries parses every panel's expressions, failing on any PromQL error.
func DashboardQueries() ([]Query, error) {
	raw, err := Files.ReadFile(DashboardPath)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardPath, err)
	}
	var out []Query
	var walk func([]panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			for _, t := range p.Targets {
				q, err := parseQuery(p.Title, t.Expr)
				if err != nil {
					return err
				}
				out = append(out, q)
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	return out, nil
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func parseQuery(title, expr string) (Query, error) {
	q := Query{Panel: title, Expr: expr}
	sub := grafanaVars.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.Contains(v, "__") { // $__rate_interval and the like: a duration
			return "1m"
		}
		return ".*" // a variable inside a regex matcher (=~"$node")
	})
	e, err := parser.NewParser(parser.Options{}).ParseExpr(sub)
	if err != nil {
		return q, fmt.Errorf("panel %q: expression %q: %w", title, expr, err)
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := Selector{Metric: vs.Name}
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" {
				s.Labels = append(s.Labels, m.Name)
			}
		}
		slices.Sort(s.Labels)
		q.Selectors = append(q.Selectors, s)
		return nil
	})
	if len(q.Selectors) == 0 {
		return q, fmt.Errorf("panel %q: expression %q selects no series", title, expr)
	}
	return q, nil
}
