package lab

import (
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestNodeConfigEtcd: a fleet node reaches the lab's etcd members over plain HTTP in
// the lab's namespaces, so its config says insecure: true (the node refuses it
// otherwise); an etcd given on a unix socket needs nothing.
func TestNodeConfigEtcd(t *testing.T) {
	read := func(f *Fleet) (endpoints []string, insecure bool) {
		t.Helper()
		var c struct {
			Cluster struct {
				Etcd struct {
					Endpoints []string `yaml:"endpoints"`
					Insecure  bool     `yaml:"insecure"`
				} `yaml:"etcd"`
			} `yaml:"cluster"`
		}
		body := f.nodeConfig(f.Nodes[0])
		if err := yaml.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("the node's config is not YAML: %v\n%s", err, body)
		}
		return c.Cluster.Etcd.Endpoints, c.Cluster.Etcd.Insecure
	}
	node := &FleetNode{Index: 2, Name: "n2", MeshAddr: "10.20.0.2", MeshAddr6: "fd00:20::2"}
	members := &Fleet{Lab: &Lab{Prefix: "t"}, Cfg: FleetConfig{EtcdMembers: 3, Cluster: "lab", GossipProfile: "tuned"}, Nodes: []*FleetNode{node}}
	if eps, insecure := read(members); !slices.Equal(eps, []string{"http://10.20.0.1:2379", "http://10.20.0.2:2379", "http://10.20.0.3:2379"}) || !insecure {
		t.Errorf("the lab's members: endpoints %v, insecure %v; want the three members' and insecure", eps, insecure)
	}
	socket := &Fleet{Lab: &Lab{Prefix: "t"}, Cfg: FleetConfig{Etcd: "unix:///run/lab/etcd.sock", Cluster: "lab", GossipProfile: "tuned"}, Nodes: []*FleetNode{node}}
	if eps, insecure := read(socket); !slices.Equal(eps, []string{"unix:///run/lab/etcd.sock"}) || insecure {
		t.Errorf("an etcd on a socket: endpoints %v, insecure %v; want the socket alone, not insecure", eps, insecure)
	}
}
