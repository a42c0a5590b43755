package bench

import (
	"context"
	"os"
	"testing"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/clustertest"
	"github.com/fibfleet/fibfleet/internal/testutil"
)

// BenchmarkFlushPropagation flushes a fleet of 3 in-process nodes (each with its own
// etcd client, gossip member and BPF epoch map) on an embedded etcd, b.N times: the
// full run, on a 3-member etcd of processes and for 20 nodes too, is
// `go run ./internal/bench/fibbench -flush`.
func BenchmarkFlushPropagation(b *testing.B) {
	testutil.Need(b, os.Geteuid() == 0, "needs root for the nodes' BPF maps")
	endpoint, _ := clustertest.Etcd(b)
	b.ResetTimer()
	res, err := MeasureFlush(context.Background(), []string{endpoint}, 3, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(Percentile(res.Applied, 50).Microseconds())/1000, "ms-applied-p50")
	b.ReportMetric(float64(Percentile(res.Applied, 99).Microseconds())/1000, "ms-applied-p99")
	b.ReportMetric(float64(Percentile(res.Acked, 99).Microseconds())/1000, "ms-acked-p99")
}

// BenchmarkFailureDetection crashes one of 3 gossip members with the tuned profile,
// b.N times, and reports how long the others took to mark it dead: the full run, with
// memberlist's LAN defaults beside it, is `go run ./internal/bench/fibbench -detect`.
func BenchmarkFailureDetection(b *testing.B) {
	ds, err := MeasureDetection(cluster.ProfileTuned, 3, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(Percentile(ds, 50).Seconds(), "s-dead-p50")
	b.ReportMetric(Percentile(ds, 100).Seconds(), "s-dead-max")
}
