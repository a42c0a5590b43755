package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/announce"
	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/dataplane"
)

// originator carries out package announce's decisions about the fleet's prefixes:
// it tells the decider whether the node can forward and what its table holds, and
// announces and withdraws through the speaker.
type originator struct {
	d       *announce.Decider
	speaker *bgp.Speaker
	// attachments reports the XDP program's links (dataplane.Attachments).
	attachments func() map[string]dataplane.Attachment
	// done says whether the dataplane holds a neighbour's whole dump.
	done func(bgp.Load) bool
	asn  uint32
	log  *slog.Logger
}

func newOriginator(cfg Config, speaker *bgp.Speaker, attachments func() map[string]dataplane.Attachment, done func(bgp.Load) bool, log *slog.Logger) *originator {
	prefixes, _ := cfg.BGP.Originate.prefixes() // validated
	return &originator{d: announce.New(prefixes, cfg.BGP.Originate.HoldDown), speaker: speaker, attachments: attachments, done: done,
		asn: cfg.BGP.ASN, log: log.With("component", "originate")}
}

// observe takes a batch of best-path changes, as the FIB does.
func (o *originator) observe(changes []bgp.Change) {
	for _, c := range changes {
		o.d.Observe(c.Prefix, c.Internal, c.Withdraw)
	}
}

// configure applies a reloaded bgp.originate: the decider's prefixes and hold-down,
// and the speaker's own prefixes (refused from upstreams, never sent to the mesh).
func (o *originator) configure(ctx context.Context, c OriginateConfig) error {
	prefixes, _ := c.prefixes() // validated
	own := make([]netip.Prefix, len(prefixes))
	for i, p := range prefixes {
		own[i] = p.Prefix
	}
	if err := o.speaker.SetOriginated(ctx, own); err != nil {
		return err
	}
	o.d.Configure(prefixes, c.HoldDown)
	return nil
}

// canForward says whether the node can carry traffic: its XDP program attached to
// every interface, and at least one eBGP upstream established with its whole table
// (not an empty one) in the dataplane; if not, why.
func canForward(att map[string]dataplane.Attachment, peers []bgp.PeerStatus, loads []bgp.Load, done func(bgp.Load) bool, asn uint32) (bool, string) {
	var detached []string
	for name, a := range att {
		if !a.Attached {
			detached = append(detached, name)
		}
	}
	if len(detached) > 0 {
		slices.Sort(detached)
		return false, "XDP program detached from " + strings.Join(detached, ", ")
	}
	upstream, n := map[netip.Addr]bool{}, 0
	for _, p := range peers {
		if upstream[p.Address] = !p.Mesh && p.ASN != asn; upstream[p.Address] {
			n++
		}
	}
	for _, l := range loads {
		if !upstream[l.Neighbor] {
			continue
		}
		if !l.Established.IsZero() && l.Received > 0 && done(l) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("no upstream's table in the dataplane (%d eBGP upstreams configured)", n)
}

// step judges once and carries the decisions out.
func (o *originator) step(now time.Time) {
	ok, why := canForward(o.attachments(), o.speaker.Peers(), o.speaker.Loads(), o.done, o.asn)
	o.d.SetCanForward(ok, why)
	announce, withdraw, _ := o.d.Decide(now)
	for _, p := range announce {
		if err := o.speaker.Announce(p); err != nil {
			o.d.Undo(p, true)
			o.log.Error("announce a prefix of the fleet", "prefix", p, "err", err)
			continue
		}
		o.log.Info("announcing a prefix of the fleet to the upstreams its exports name", "prefix", p)
	}
	for _, p := range withdraw {
		if err := o.speaker.Withdraw(p); err != nil {
			o.d.Undo(p, false)
			o.log.Error("withdraw a prefix of the fleet", "prefix", p, "err", err)
			continue
		}
		o.log.Warn("withdrew a prefix of the fleet", "prefix", p, "why", o.why(p))
	}
}

// why is a prefix's current reason, for the log.
func (o *originator) why(p netip.Prefix) string {
	for _, s := range o.d.States() {
		if s.Prefix == p {
			return s.Why
		}
	}
	return "no longer configured"
}

// run judges every second until ctx ends.
func (o *originator) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		o.step(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
