// Package mesh keeps a node's iBGP mesh equal to its fleet's live members, and
// watches that the mesh carried every route. The members come from the fleet's gossip
// (cluster.Members), the sessions are the BGP speaker's (bgp.Speaker); both are met
// through the small interfaces below, so the decisions are tested without either.
package mesh

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cluster"
	"github.com/fibfleet/fibfleet/internal/nodeapi"
)

// Self is the node the mesh is kept for.
type Self struct {
	Name string
	// Address is its mesh address (the sessions run over it); ASN its AS, which
	// every peer must share (the mesh is iBGP).
	Address netip.Addr
	ASN     uint32
}

// Desired is the mesh a node should have: every live member with a mesh address of
// its own and the node's AS, by address. otherAS are the live members left out for
// another AS (a configuration error, worth a warning).
func Desired(members []cluster.Member, self Self) (want map[netip.Addr]cluster.Member, otherAS []cluster.Member) {
	want = map[netip.Addr]cluster.Member{}
	for _, m := range members {
		a, err := netip.ParseAddr(m.Meta.BGPAddress)
		if m.Name == self.Name || err != nil || a == self.Address || m.State != cluster.Alive {
			continue
		}
		if m.Meta.ASN != self.ASN {
			otherAS = append(otherAS, m)
			continue
		}
		want[a] = m
	}
	return want, otherAS
}

// Sessions is what the reconciler needs of the BGP speaker.
type Sessions interface {
	AddMeshPeer(ctx context.Context, p bgp.MeshPeer) error
	RemoveMeshPeer(ctx context.Context, a netip.Addr) error
}

// Members is what the reconciler needs of the gossip: its view, and a signal when it
// changes.
type Members interface {
	View() []cluster.Member
	Changes() <-chan struct{}
}

// Reconciler keeps the sessions equal to Desired: a member that dies or leaves is
// unpeered after Hold (its routes withdrawn then), one that (re)joins is peered.
type Reconciler struct {
	self     Self
	sessions Sessions
	members  Members
	log      *slog.Logger

	peered map[netip.Addr]string    // address -> member
	gone   map[netip.Addr]time.Time // peered members not alive, since when
	moved  map[netip.Addr]bool      // those Gone was told of
	mu     sync.Mutex
	recent []nodeapi.MeshChange

	// Gone, when set, is told of a peer whose member died (not one that left: its
	// process stopped, its XDP program forwards on), before its session is removed
	// (and its routes withdrawn, which takes a while with a full table): the FIB
	// moves the traffic through it to backup next hops at once.
	// Back is told of a peer added again, or alive again within Hold.
	Gone, Back func(peer netip.Addr)
	// Hold is how long a member that is no longer alive keeps its session (and so
	// its routes, which BGP graceful restart keeps while the session is down): a
	// node restarting goes on forwarding, and comes back within it. Its traffic
	// moves off it at once all the same (Gone). 0 removes it at once.
	Hold time.Duration
}

// logSize is how many of the last changes Log keeps.
const logSize = 32

// NewReconciler returns a reconciler of self's mesh; nothing changes before Reconcile
// or Run.
func NewReconciler(self Self, s Sessions, m Members, log *slog.Logger) *Reconciler {
	return &Reconciler{self: self, sessions: s, members: m, log: log, peered: map[netip.Addr]string{}, gone: map[netip.Addr]time.Time{}, moved: map[netip.Addr]bool{}}
}

// Reconcile makes one pass: removes the sessions no live member wants, adds the
// missing ones. A failed change is logged and tried again on the next pass. Not safe
// for concurrent use (Run calls it).
func (r *Reconciler) Reconcile(ctx context.Context) {
	view := r.members.View()
	want, otherAS := Desired(view, r.self)
	for _, m := range otherAS {
		r.log.Warn("member with another AS: not peered (the mesh is iBGP)", "member", m.Name, "asn", m.Meta.ASN)
	}
	now := time.Now()
	for a, node := range r.peered {
		if _, ok := want[a]; ok {
			continue
		}
		reason, left := "not a live member", false
		for _, m := range view {
			if m.Name == node {
				reason, left = "member "+string(m.State), m.State == cluster.Left
			}
		}
		since, wasGone := r.gone[a]
		if !wasGone {
			since = now
			r.gone[a] = now
			// A member that left stopped its process: its XDP program goes on
			// forwarding (a restart, an upgrade), so its traffic stays. A dead one
			// may be a machine gone: its traffic moves.
			if r.Gone != nil && !left {
				r.Gone(a)
				r.moved[a] = true
			}
			if r.Hold > 0 {
				r.note(node, a, "hold", fmt.Sprintf("%s: session kept %s for a restart", reason, r.Hold))
			}
		}
		if now.Sub(since) < r.Hold {
			continue
		}
		if err := r.sessions.RemoveMeshPeer(ctx, a); err != nil {
			r.log.Error("remove mesh peer", "peer", a, "err", err)
			continue
		}
		delete(r.peered, a)
		delete(r.gone, a)
		delete(r.moved, a)
		r.note(node, a, "remove", reason)
	}
	for a, m := range want {
		if _, ok := r.peered[a]; ok {
			if _, wasGone := r.gone[a]; wasGone {
				delete(r.gone, a)
				r.note(m.Name, a, "back", "member alive again within the hold time")
				if r.Back != nil && r.moved[a] {
					r.Back(a)
				}
				delete(r.moved, a)
			}
			continue
		}
		if err := r.sessions.AddMeshPeer(ctx, bgp.MeshPeer{Address: a, Port: m.Meta.BGPPort}); err != nil {
			r.log.Error("add mesh peer", "peer", a, "member", m.Name, "err", err)
			continue
		}
		r.peered[a] = m.Name
		r.note(m.Name, a, "add", "member alive")
		if r.Back != nil {
			r.Back(a)
		}
	}
}

// Run reconciles until ctx ends: at once, on every change of the members, and every
// 5 s (a failed change is tried again).
func (r *Reconciler) Run(ctx context.Context) {
	r.Reconcile(ctx)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.members.Changes():
		case <-tick.C:
		}
		r.Reconcile(ctx)
	}
}

func (r *Reconciler) note(node string, peer netip.Addr, action, reason string) {
	r.log.Info("mesh peer "+map[string]string{"add": "added", "remove": "removed", "hold": "held", "back": "back"}[action], "member", node, "peer", peer, "reason", reason)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recent = append(r.recent, nodeapi.MeshChange{At: time.Now(), Node: node, Peer: peer.String(), Action: action, Reason: reason})
	if len(r.recent) > logSize {
		r.recent = r.recent[len(r.recent)-logSize:]
	}
}

// Log is the mesh's last changes, oldest first, for the node API.
func (r *Reconciler) Log() []nodeapi.MeshChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recent)
}
