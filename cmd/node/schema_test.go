package main

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// chartSchema is the Helm chart's values schema; its $defs.nodeConfig is what the
// chart accepts of this configuration (under config and each nodes.<name>).
const chartSchema = "../../deploy/k8s/fibfleet/values.schema.json"

// chartOwned are the configuration's fields the chart sets itself, which its schema
// must refuse in the values (a value there would be overridden without a word), each
// with what the chart sets it from.
var chartOwned = map[string]string{
	"node_name":                     "the container's -node-name (the Kubernetes node's name)",
	"http_address":                  "the container's -http-address (the host's IP and ports.metrics)",
	"http_tls":                      "httpTLS (its Secret mounted)",
	"bpffs":                         "the bpffs value, mounted at the node's default /sys/fs/bpf",
	"cluster.name":                  "clusterName",
	"cluster.etcd":                  "etcd (bundled or external, with the mounted certificates)",
	"cluster.embedded":              "etcd: a chart's node never runs its own",
	"cluster.gossip.key_file":       "the mounted gossip Secret",
	"cluster.gossip.port":           "ports.gossip",
	"bgp.neighbors[].password_file": "the neighbour's passwordSecret (the Secret mounted)",
}

// chartOnly are the values the schema has that the node's configuration has not: the
// chart turns them into the node's fields.
var chartOnly = map[string]string{
	"bgp.neighbors[].passwordSecret": "becomes password_file",
}

// schemaNode is the part of JSON schema the chart uses.
type schemaNode struct {
	Type                 any                    `json:"type"`
	Enum                 []any                  `json:"enum"`
	Properties           map[string]*schemaNode `json:"properties"`
	Items                *schemaNode            `json:"items"`
	AdditionalProperties any                    `json:"additionalProperties"`
}

// TestChartSchemaMatchesConfig: every field the node's configuration accepts is in
// the chart's values schema with a type the node reads (or is one the chart sets
// itself, and then not in the schema), and the schema has no field the node would
// refuse. A field added to Config without the schema fails here.
func TestChartSchemaMatchesConfig(t *testing.T) {
	raw, err := os.ReadFile(chartSchema)
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Defs map[string]*schemaNode `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("%s: %v", chartSchema, err)
	}
	node := root.Defs["nodeConfig"]
	if node == nil {
		t.Fatalf("%s has no $defs.nodeConfig", chartSchema)
	}
	fields := map[string]reflect.Type{}
	configFields(reflect.TypeOf(Config{}), "", fields)
	if len(fields) < 100 {
		t.Fatalf("found %d configuration fields: is the walk reading the yaml tags?", len(fields))
	}
	schema := map[string]*schemaNode{}
	schemaFields(node, "", schema)

	for path, typ := range fields {
		owner, owned := chartOwned[path]
		s, in := schema[path]
		switch {
		case owned && in:
			t.Errorf("%s: the chart sets it (from %s), but the schema lets the values set it too", path, owner)
		case !owned && !in && !underOwned(path):
			t.Errorf("%s (%s): in the node's configuration, not in the chart's schema", path, typ)
		case in && !typeMatches(s, typ):
			t.Errorf("%s: the schema says %v (enum %v), the node reads %s", path, s.Type, s.Enum, typ)
		}
	}
	for path, s := range schema {
		if _, ok := fields[path]; ok || chartOnly[path] != "" || underChartOnly(path) {
			continue
		}
		t.Errorf("%s: in the chart's schema, not a field of the node's configuration (the node would refuse it)", path)
		_ = s
	}
	for path := range chartOwned {
		if _, ok := fields[path]; !ok {
			t.Errorf("chartOwned names %s, which the configuration does not have", path)
		}
	}
	// Objects the node reads field by field refuse unknown fields in the schema too.
	for path, s := range schema {
		if s.Properties != nil && s.AdditionalProperties != false {
			t.Errorf("%s: the schema takes unknown fields (additionalProperties is not false); the node refuses them", path)
		}
	}
	if node.AdditionalProperties != false {
		t.Error("nodeConfig takes unknown fields; the node refuses them")
	}
}

func underOwned(path string) bool {
	for p := range chartOwned {
		if strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[]") {
			return true
		}
	}
	return false
}

func underChartOnly(path string) bool {
	for p := range chartOnly {
		if strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

var durationType = reflect.TypeOf(time.Duration(0))

// configFields walks a configuration type by its yaml tags (inline structs merged),
// recording every field's path ("a.b", "list[].c") and type.
func configFields(t reflect.Type, prefix string, out map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if opts == "inline" {
			configFields(ft, prefix, out)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		out[path] = ft
		switch {
		case ft.Kind() == reflect.Struct:
			configFields(ft, path, out)
		case ft.Kind() == reflect.Slice && elem(ft).Kind() == reflect.Struct:
			configFields(elem(ft), path+"[]", out)
		}
	}
}

func elem(t reflect.Type) reflect.Type {
	t = t.Elem()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// schemaFields records every property of the schema by the same paths.
func schemaFields(s *schemaNode, prefix string, out map[string]*schemaNode) {
	for name, p := range s.Properties {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		out[path] = p
		schemaFields(p, path, out)
		if p.Items != nil {
			schemaFields(p.Items, path+"[]", out)
		}
	}
}

// typeMatches: the schema's type (or enum) is one the node decodes into t.
func typeMatches(s *schemaNode, t reflect.Type) bool {
	var want string
	switch {
	case t == durationType:
		want = "string" // a Go duration: 500ms, 5s
	case t.Kind() == reflect.String:
		want = "string"
	case t.Kind() == reflect.Bool:
		want = "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		want = "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		want = "number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		want = "array"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		want = "object"
	}
	if s.Type == nil && len(s.Enum) > 0 {
		// An enum of strings for a string field.
		if want != "string" {
			return false
		}
		return !slices.ContainsFunc(s.Enum, func(v any) bool { _, ok := v.(string); return !ok })
	}
	switch ty := s.Type.(type) {
	case string:
		return ty == want
	case []any:
		return slices.Contains(ty, any(want))
	}
	return false
}
