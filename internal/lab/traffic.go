package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/fibfleet/fibfleet/fib"
	"github.com/fibfleet/fibfleet/internal/table"
)

// TrafficConfig says what a lab's traffic generator sends: UDP to SinkPort, from a
// source namespace, at Rate datagrams per second in all. Flows go to Destinations
// addresses inside the table's routes, chosen with a Zipf law (a few hot, many rare),
// each flow a burst of FlowLength datagrams; a Flood share of the datagrams goes to
// fresh random addresses of the table, one datagram each (the random-destination flood
// a cache must survive).
type TrafficConfig struct {
	Routes       []table.Route
	Destinations int
	FlowLength   int
	Rate         float64
	// Flood is the share (0 to 1) of datagrams sent to fresh random destinations.
	Flood float64
	Seed  uint64
}

// Traffic is a running generator.
type Traffic struct {
	// Sent and Flooded count datagrams sent (Flooded: to fresh destinations); Errors
	// counts sends that failed.
	Sent, Flooded, Errors atomic.Uint64
	cancel                context.CancelFunc
	done                  chan struct{}
}

// StartTraffic starts sending from namespace src until Stop.
func StartTraffic(src *Netns, cfg TrafficConfig) (*Traffic, error) {
	if len(cfg.Routes) == 0 {
		return nil, fmt.Errorf("lab: traffic needs routes to send to")
	}
	if cfg.Rate <= 0 || cfg.Destinations <= 0 || cfg.FlowLength <= 0 || cfg.Flood < 0 || cfg.Flood > 1 {
		return nil, fmt.Errorf("lab: traffic: rate %v, %d destinations, flows of %d, flood %v: use positive counts and a flood share from 0 to 1",
			cfg.Rate, cfg.Destinations, cfg.FlowLength, cfg.Flood)
	}
	var conn4, conn6 *net.UDPConn
	err := src.Do(func() error {
		var err error
		if conn4, err = net.ListenUDP("udp4", nil); err != nil {
			return err
		}
		conn6, err = net.ListenUDP("udp6", nil)
		return err
	})
	if err != nil {
		if conn4 != nil {
			conn4.Close()
		}
		return nil, fmt.Errorf("lab: traffic sockets in %s: %w", src.Name, err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	dsts := make([]netip.Addr, cfg.Destinations)
	for i := range dsts {
		dsts[i] = fib.RandomIn(cfg.Routes[rng.IntN(len(cfg.Routes))].Prefix, rng)
	}
	zipf := rand.NewZipf(rng, 1.2, 1, uint64(len(dsts)-1))
	ctx, cancel := context.WithCancel(context.Background())
	t := &Traffic{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer conn4.Close()
		defer conn6.Close()
		// Send in ticks of 10 ms, the rate's share each.
		const tick = 10 * time.Millisecond
		per := cfg.Rate * tick.Seconds()
		tk := time.NewTicker(tick)
		defer tk.Stop()
		credit, left := 0.0, 0
		var flow netip.Addr
		buf := make([]byte, 0, 64)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			credit += per
			for ; credit >= 1; credit-- {
				dst, flood := flow, rng.Float64() < cfg.Flood
				switch {
				case flood:
					dst = fib.RandomIn(cfg.Routes[rng.IntN(len(cfg.Routes))].Prefix, rng)
				case left == 0:
					flow, left = dsts[zipf.Uint64()], cfg.FlowLength
					dst = flow
				}
				if !flood {
					left--
				}
				c := conn4
				if dst.Is6() {
					c = conn6
				}
				buf = fmt.Appendf(buf[:0], "fibfleet dst=%s seq=%d", dst, t.Sent.Load())
				if _, err := c.WriteToUDPAddrPort(buf, netip.AddrPortFrom(dst, SinkPort)); err != nil {
					t.Errors.Add(1)
					continue
				}
				t.Sent.Add(1)
				if flood {
					t.Flooded.Add(1)
				}
			}
		}
	}()
	return t, nil
}

// Stop ends the generator.
func (t *Traffic) Stop() {
	t.cancel()
	<-t.done
}
