package mesh

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cluster"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func member(name, addr string, st cluster.MemberState, asn uint32) cluster.Member {
	return cluster.Member{Name: name, State: st, Meta: cluster.Meta{BGPAddress: addr, ASN: asn}}
}

var self = Self{Name: "n1", Address: netip.MustParseAddr("10.0.0.1"), ASN: 65000}

func TestDesired(t *testing.T) {
	view := []cluster.Member{
		member("n1", "10.0.0.1", cluster.Alive, 65000),    // itself
		member("n2", "10.0.0.2", cluster.Alive, 65000),    // a peer
		member("n3", "10.0.0.3", cluster.Dead, 65000),     // dead
		member("n4", "10.0.0.4", cluster.Left, 65000),     // left
		member("n5", "", cluster.Alive, 65000),            // no mesh address
		member("n6", "10.0.0.6", cluster.Alive, 65001),    // another AS
		member("n7", "10.0.0.1", cluster.Alive, 65000),    // claims this node's address
		member("n8", "2001:db8::8", cluster.Alive, 65000), // an IPv6 mesh address
	}
	want, other := Desired(view, self)
	got := slices.SortedFunc(maps.Keys(want), netip.Addr.Compare)
	if !slices.Equal(got, []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("2001:db8::8")}) {
		t.Errorf("Desired peers %v, want n2's and n8's addresses", got)
	}
	if want[netip.MustParseAddr("10.0.0.2")].Name != "n2" {
		t.Errorf("10.0.0.2 is %q, want n2", want[netip.MustParseAddr("10.0.0.2")].Name)
	}
	if len(other) != 1 || other[0].Name != "n6" {
		t.Errorf("other AS: %v, want n6", other)
	}
}

type fakeSessions struct {
	peers   map[netip.Addr]uint16
	failAdd map[netip.Addr]bool
}

func (f *fakeSessions) AddMeshPeer(_ context.Context, p bgp.MeshPeer) error {
	if f.failAdd[p.Address] {
		return errors.New("refused")
	}
	f.peers[p.Address] = p.Port
	return nil
}

func (f *fakeSessions) RemoveMeshPeer(_ context.Context, a netip.Addr) error {
	delete(f.peers, a)
	return nil
}

type fakeMembers struct{ view []cluster.Member }

func (f *fakeMembers) View() []cluster.Member   { return f.view }
func (f *fakeMembers) Changes() <-chan struct{} { return nil }

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	s := &fakeSessions{peers: map[netip.Addr]uint16{}, failAdd: map[netip.Addr]bool{}}
	m := &fakeMembers{}
	r := NewReconciler(self, s, m, quiet)
	a2, a3 := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	has := func(what string, want ...netip.Addr) {
		t.Helper()
		if got := slices.SortedFunc(maps.Keys(s.peers), netip.Addr.Compare); !slices.Equal(got, want) {
			t.Fatalf("%s: sessions %v, want %v", what, got, want)
		}
	}

	n3 := member("n3", "10.0.0.3", cluster.Alive, 65000)
	n3.Meta.BGPPort = 1179
	m.view = []cluster.Member{member("n1", "10.0.0.1", cluster.Alive, 65000), member("n2", "10.0.0.2", cluster.Alive, 65000), n3}
	s.failAdd[a3] = true
	r.Reconcile(ctx)
	has("n3's add refused", a2)
	delete(s.failAdd, a3)
	r.Reconcile(ctx)
	has("the refused add tried again", a2, a3)
	if s.peers[a3] != 1179 {
		t.Errorf("n3 peered on port %d, want its BGPPort 1179", s.peers[a3])
	}

	m.view[1].State = cluster.Dead
	r.Reconcile(ctx)
	has("n2 dead: unpeered", a3)
	m.view[1].State = cluster.Alive
	r.Reconcile(ctx)
	has("n2 back", a2, a3)
	m.view = m.view[:2]
	r.Reconcile(ctx)
	has("n3 gone from the view", a2)

	var log []string
	for _, c := range r.Log() {
		log = append(log, c.Action+" "+c.Node+" ("+c.Reason+")")
	}
	want := []string{"add n2 (member alive)", "add n3 (member alive)", "remove n2 (member dead)", "add n2 (member alive)", "remove n3 (not a live member)"}
	if !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// TestReconcileHold: a member no longer alive keeps its session for Hold (graceful
// restart keeps its routes meanwhile); one that left (its process stopped, its XDP
// forwards on) keeps its traffic, a dead one's moves off at once (Gone); alive again
// within the hold, it is back (Back, if Gone was told) with its session never
// removed; gone longer, it is unpeered.
func TestReconcileHold(t *testing.T) {
	ctx := context.Background()
	s := &fakeSessions{peers: map[netip.Addr]uint16{}, failAdd: map[netip.Addr]bool{}}
	m := &fakeMembers{view: []cluster.Member{member("n1", "10.0.0.1", cluster.Alive, 65000), member("n2", "10.0.0.2", cluster.Alive, 65000)}}
	r := NewReconciler(self, s, m, quiet)
	r.Hold = 150 * time.Millisecond
	var events []string
	r.Gone = func(a netip.Addr) { events = append(events, "gone "+a.String()) }
	r.Back = func(a netip.Addr) { events = append(events, "back "+a.String()) }
	a2 := netip.MustParseAddr("10.0.0.2")
	r.Reconcile(ctx)

	m.view[1].State = cluster.Left // a restart: the member leaves gracefully
	r.Reconcile(ctx)
	r.Reconcile(ctx)
	if _, ok := s.peers[a2]; !ok {
		t.Fatal("n2 left: session removed at once, want it kept for the hold")
	}
	m.view[1].State = cluster.Alive
	r.Reconcile(ctx)
	if _, ok := s.peers[a2]; !ok {
		t.Fatal("n2 back within the hold: session missing")
	}
	m.view[1].State = cluster.Dead
	r.Reconcile(ctx)
	if _, ok := s.peers[a2]; !ok {
		t.Fatal("n2 dead: session removed before the hold")
	}
	time.Sleep(200 * time.Millisecond)
	r.Reconcile(ctx)
	if _, ok := s.peers[a2]; ok {
		t.Fatal("n2 dead longer than the hold: session still there")
	}
	want := []string{"back 10.0.0.2", "gone 10.0.0.2"} // Back at the add; Gone at the death, not the leave
	if !slices.Equal(events, want) {
		t.Errorf("callbacks %q, want %q", events, want)
	}
	var log []string
	for _, c := range r.Log() {
		log = append(log, c.Action+" "+c.Node)
	}
	if wantLog := []string{"add n2", "hold n2", "back n2", "hold n2", "remove n2"}; !slices.Equal(log, wantLog) {
		t.Errorf("log %q, want %q", log, wantLog)
	}
}
