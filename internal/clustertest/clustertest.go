// Package clustertest holds what tests of the fleet share: a real etcd (embedded, its
// data in the test's temporary directory) and an Applier that records what the fleet
// told a node to apply. The cluster package's own tests use it too, from package
// cluster_test.
package clustertest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Etcd starts a one-member etcd for the test, on a loopback port, and returns its
// endpoint and a client on it; both go when the test ends.
func Etcd(t testing.TB) (string, *clientv3.Client) {
	t.Helper()
	e, err := cluster.StartEmbedded(cluster.EmbeddedConfig{Dir: t.TempDir(), Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return e.Endpoint, cli
}

// Store starts an etcd for the test (Etcd) and returns the store of fleet "lab" on
// it, and the raw client.
func Store(t testing.TB) (*cluster.Store, *clientv3.Client) {
	t.Helper()
	_, cli := Etcd(t)
	s, err := cluster.NewStore(cli, "lab")
	if err != nil {
		t.Fatal(err)
	}
	return s, cli
}

// Applier is a cluster.Applier that records every epoch and policy it was told to
// apply, and reports version "test" and 10 IPv4 and 1 IPv6 routes. Safe for
// concurrent use.
type Applier struct {
	mu       sync.Mutex
	epochs   []uint32
	policies []cache.Policy
}

func (a *Applier) ApplyEpoch(e uint32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.epochs = append(a.epochs, e)
	return nil
}

func (a *Applier) ApplyPolicy(p cache.Policy) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policies = append(a.policies, p)
	return nil
}

func (a *Applier) Report(s *cluster.Applied) { s.Version = "test"; s.Routes = [2]int{10, 1} }

// Calls returns every epoch and policy applied, in order.
func (a *Applier) Calls() ([]uint32, []cache.Policy) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.epochs), slices.Clone(a.policies)
}

// Last returns the last policy and epoch applied (zero values before any).
func (a *Applier) Last() (cache.Policy, uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var p cache.Policy
	var e uint32
	if n := len(a.policies); n > 0 {
		p = a.policies[n-1]
	}
	if n := len(a.epochs); n > 0 {
		e = a.epochs[n-1]
	}
	return p, e
}
