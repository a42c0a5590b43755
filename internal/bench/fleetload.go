package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fibfleet/fibfleet/internal/lab"
	"github.com/fibfleet/fibfleet/internal/table"
)

// FleetLoad is one full-table load of the lab's fleet of three from n1's upstream:
// n1 has one upstream and two mesh peers, n2 and n3 take the table from n1 over the
// mesh.
type FleetLoad struct {
	// Loaded is, for n1, n2 and n3, from the table's announcement (n1's session with
	// its upstream up since the fleet formed) to the node's forwarding table holding
	// it.
	Loaded []time.Duration
	// PeakRSS (bytes, since the node's start) and CPU (user and system, during the
	// load) of n1, n2 and n3.
	PeakRSS []int64
	CPU     []time.Duration
	// Batches is how many FIB batches each node applied since its start (-1 where
	// the build does not count them): the load's changes over it are their size.
	Batches []float64
	// Resets is how many times each node logged a BGP session going down
	// (GoBGP's "Peer Down") from the table's announcement to the end: a mesh
	// session's at both its ends, n1's upstream's at n1.
	Resets []int
	// Alarms is the most mesh peers any node had in alarm at once (its prefixes
	// differing, fibfleet_cluster_mesh_digest_mismatches) while polled, and
	// Resends the last resorts run (fibfleet_cluster_mesh_resends_total) and
	// Lost the times a node logged routes lost on the way: all should stay 0.
	Alarms, Resends, Lost int
}

// FleetLoadOptions say what MeasureFleetLoad loads.
type FleetLoadOptions struct {
	NodeBinary, EtcdBinary, Dir string
	Routes                      []table.Route
	// Attrs, when set, gives the routes real AS paths and communities.
	Attrs *table.Model
	// Hogs is how many busy loops (processes spinning on the CPU) run from the
	// table's announcement to the load's end: issue 35's condition under load is
	// two on this 2-core machine.
	Hogs int
	// ProfileDir, when set, gets n1's CPU profile of the load's first minute
	// (n1-cpu.pprof), n2's of its first 150 s (n2-cpu.pprof: about the whole
	// load, where a receiver's cost that grows with the load's length shows),
	// n1's heap at 80% of its load (n1-heap-load.pprof), and n1's and n2's at
	// its end (n1-heap.pprof, n2-heap.pprof, after a collection: with what the
	// whole load allocated).
	ProfileDir string
}

// MeasureFleetLoad starts the lab's fleet of three (real node processes, a 3-member
// etcd, BIRD as n1's upstream) with the table held back, waits until it has formed,
// has BIRD announce the table, and waits until every node holds it. As root.
func MeasureFleetLoad(o FleetLoadOptions) (r FleetLoad, err error) {
	routes := o.Routes
	cfg := lab.FleetConfig{NodeBinary: o.NodeBinary, EtcdBinary: o.EtcdBinary, Dir: o.Dir, Table: routes, TableAttrs: o.Attrs, TableLater: true}
	if o.ProfileDir != "" {
		cfg.NodeExtra = "pprof: true\n"
	}
	fl, err := lab.StartFleet(cfg)
	if fl != nil {
		defer func() { err = errors.Join(err, fl.Close()) }()
	}
	if err != nil {
		return r, err
	}
	// BIRD's routes and the subnets n1 announces (lab.FleetRoutes), before the table.
	const routes4, routes6 = 4, 3
	if err := fl.WaitFormed(2*time.Minute, routes4, routes6); err != nil {
		return r, err
	}
	cpu0 := make([]time.Duration, len(fl.Nodes))
	logFrom := make([]int64, len(fl.Nodes))
	for i, n := range fl.Nodes {
		cpu0[i] = cpuTime(n.Cmd.Process.Pid)
		if st, err := os.Stat(n.LogPath); err == nil {
			logFrom[i] = st.Size()
		}
	}
	stopHogs, err := lab.StartBusyLoops(o.Hogs)
	if err != nil {
		return r, err
	}
	defer stopHogs()
	start := time.Now()
	if out, err := fl.Birdc("enable", lab.FleetTableProtocol); err != nil {
		return r, fmt.Errorf("bench: announce the table: %w: %s", err, out)
	}
	n1 := fl.Nodes[0]
	profiled := make(chan struct{})
	if o.ProfileDir != "" {
		go fleetProfile(n1, o.ProfileDir, "n1-cpu", 60)
		go func() {
			defer close(profiled)
			fleetProfile(fl.Nodes[1], o.ProfileDir, "n2-cpu", 150)
		}()
	} else {
		close(profiled)
	}
	want := float64(len(routes) + routes4)
	r.Loaded = make([]time.Duration, len(fl.Nodes))
	heapMid := false
	for deadline, left := start.Add(20*time.Minute), len(fl.Nodes); left > 0; time.Sleep(200 * time.Millisecond) {
		for i, n := range fl.Nodes {
			m, err := n.Metrics()
			if err != nil {
				continue
			}
			if got := m[`fibfleet_fib_routes{family="ipv4"}`]; i == 0 && !heapMid && o.ProfileDir != "" && got >= 0.8*want {
				// n1's heap at 80% of its load, when its mesh peers' queues hold
				// what they have not yet read (the load's end has none).
				heapMid = true
				go fleetProfile(n1, o.ProfileDir, "n1-heap-load", 0)
			}
			r.Alarms = max(r.Alarms, int(m["fibfleet_cluster_mesh_digest_mismatches"]))
			if r.Loaded[i] == 0 && m[`fibfleet_fib_routes{family="ipv4"}`] == want {
				r.Loaded[i] = time.Since(start)
				left--
			}
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("bench: %d of the fleet's nodes did not hold %d prefixes within 20 minutes", left, len(routes))
		}
	}
	// The same table everywhere: the nodes' digests agree (their reports lag by
	// seconds, not timed).
	if err := fl.WaitFormed(2*time.Minute, len(routes)+routes4, routes6); err != nil {
		return r, err
	}
	stopHogs()
	for i, n := range fl.Nodes {
		batches := -1.0
		if m, err := n.Metrics(); err == nil {
			if b, ok := m["fibfleet_fib_batches_total"]; ok {
				batches = b
			}
			r.Resends += int(m["fibfleet_cluster_mesh_resends_total"])
			r.Alarms = max(r.Alarms, int(m["fibfleet_cluster_mesh_digest_mismatches"]))
		}
		log, err := os.ReadFile(n.LogPath)
		if err != nil {
			return r, fmt.Errorf("bench: %s's log: %w", n.Name, err)
		}
		log = log[min(logFrom[i], int64(len(log))):]
		r.Resets = append(r.Resets, bytes.Count(log, []byte("Peer Down")))
		r.Lost += bytes.Count(log, []byte("routes were lost on the way"))
		r.Batches = append(r.Batches, batches)
		pid := n.Cmd.Process.Pid
		r.PeakRSS = append(r.PeakRSS, peakRSSBytes(pid))
		r.CPU = append(r.CPU, cpuTime(pid)-cpu0[i])
	}
	if o.ProfileDir != "" {
		fleetProfile(n1, o.ProfileDir, "n1-heap", 0)
		fleetProfile(fl.Nodes[1], o.ProfileDir, "n2-heap", 0)
	}
	<-profiled // n2's profile may outlast the load: the fleet stays until it ends
	return r, nil
}

// fleetProfile saves one of a fleet node's Go profiles into dir (saveProfile).
func fleetProfile(n *lab.FleetNode, dir, name string, seconds int) {
	saveProfile(func(path string, timeout time.Duration) ([]byte, error) {
		return lab.UnixGetWithin(n.APISocket, path, timeout)
	}, dir, name, seconds)
}
