package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Meta is what a node gossips about itself: where its iBGP mesh sessions go, its AS,
// where its API listens, its version. It must fit memberlist's 512 bytes.
type Meta struct {
	// BGPAddress and BGPAddress6 are the node's mesh addresses (the mesh session runs
	// over the IPv4 one; the IPv6 one is the next hop of what it originates in IPv6).
	BGPAddress  string `json:"bgp,omitempty"`
	BGPAddress6 string `json:"bgp6,omitempty"`
	// BGPPort is its BGP port when not 179.
	BGPPort    uint16 `json:"bgp_port,omitempty"`
	ASN        uint32 `json:"asn,omitempty"`
	APIAddress string `json:"api,omitempty"`
	Version    string `json:"v,omitempty"`
}

// Failure-detection profiles.
const (
	// ProfileTuned notices a crashed member in about 1.5 s on a LAN (probe every
	// 250 ms, 200 ms to answer, suspicion of 4 probe intervals scaled by the fleet's
	// size, at most 4 times that): an edge router fleet must stop sending traffic to
	// a dead member within seconds. A suspected member refutes its suspicion as soon
	// as it hears of it; the suspicion must outlast the stalls of a node that loads
	// a full table on 2 cores beside two others: with 3 intervals (750 ms once a
	// second member agreed) a loaded member was marked dead in 2 of 6 runs of the
	// fleet test (2026-12-05/06); its refutations otherwise came 3 to 333 ms after
	// the suspicion. 4 intervals is 1 s in a fleet of three (memberlist then needs no
	// second opinion).
	ProfileTuned = "tuned"
	// ProfileLAN is memberlist's default LAN profile (probe every second; about 6 s).
	ProfileLAN = "lan"
)

// MembersConfig configures a node's membership.
type MembersConfig struct {
	// Name is the node's name (the same as its etcd registration).
	Name string
	// BindAddress is host:port for gossip (UDP and TCP); port 0 picks a free one.
	BindAddress string
	// AdvertiseAddress is host:port others reach this node at, when it is not
	// BindAddress (NAT, or a bind to 0.0.0.0).
	AdvertiseAddress string
	// Key encrypts and authenticates gossip (AES, 16, 24 or 32 bytes); nil: clear.
	Key []byte
	// Profile is ProfileTuned (default) or ProfileLAN.
	Profile string
	Meta    Meta
	Logger  *slog.Logger
}

// Member is one node as this node sees it. Dead and left members stay in the view
// (with when they went), so a death is visible and not just an absence.
type Member struct {
	Name  string      `json:"name"`
	Addr  string      `json:"addr"`
	Meta  Meta        `json:"meta"`
	State MemberState `json:"state"`
	Since time.Time   `json:"since"`
}

// MemberState is a member's state in the gossip's view.
type MemberState string

const (
	Alive MemberState = "alive"
	// Dead: it stopped answering (a crash, a partition); Left: it said goodbye.
	Dead MemberState = "dead"
	Left MemberState = "left"
)

// MemberStates are every state, for counting.
var MemberStates = []MemberState{Alive, Dead, Left}

// Members runs memberlist for a node and keeps the view of the fleet.
type Members struct {
	ml  *memberlist.Memberlist
	log *slog.Logger

	meta    []byte
	mu      sync.Mutex
	view    map[string]*Member
	leaving map[string]time.Time // members that said they leave, and when
	changes chan struct{}
}

// StartMembers starts gossip on the configured address. Join others with Join.
func StartMembers(cfg MembersConfig) (*Members, error) {
	if err := checkNode(cfg.Name); err != nil {
		return nil, err
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.Default()
	}
	var c *memberlist.Config
	switch cfg.Profile {
	case "", ProfileTuned:
		c = memberlist.DefaultLANConfig()
		c.ProbeInterval = 250 * time.Millisecond
		c.ProbeTimeout = 200 * time.Millisecond
		c.GossipInterval = 50 * time.Millisecond
		c.SuspicionMult = 4
		c.SuspicionMaxTimeoutMult = 4
	case ProfileLAN:
		c = memberlist.DefaultLANConfig()
	default:
		return nil, fmt.Errorf("cluster: gossip profile %q: use %s or %s", cfg.Profile, ProfileTuned, ProfileLAN)
	}
	c.Name = cfg.Name
	host, port, err := splitHostPort(cfg.BindAddress, "gossip bind address")
	if err != nil {
		return nil, err
	}
	c.BindAddr, c.BindPort = host, port
	if cfg.AdvertiseAddress != "" {
		if c.AdvertiseAddr, c.AdvertisePort, err = splitHostPort(cfg.AdvertiseAddress, "gossip advertise address"); err != nil {
			return nil, err
		}
	}
	if len(cfg.Key) > 0 {
		switch len(cfg.Key) {
		case 16, 24, 32:
		default:
			return nil, fmt.Errorf("cluster: gossip key of %d bytes: use 16, 24 or 32 (AES-128, -192, -256)", len(cfg.Key))
		}
		c.SecretKey = cfg.Key
	}
	meta, err := json.Marshal(cfg.Meta)
	if err != nil {
		return nil, err
	}
	if len(meta) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("cluster: node metadata is %d bytes, memberlist carries at most %d: shorten the addresses", len(meta), memberlist.MetaMaxSize)
	}
	m := &Members{log: lg, meta: meta, view: map[string]*Member{}, leaving: map[string]time.Time{}, changes: make(chan struct{}, 1)}
	c.Delegate = m
	c.Events = m
	c.Logger = log.New(&logWriter{log: lg.With("component", "memberlist")}, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		return nil, fmt.Errorf("cluster: start gossip on %s (is the port in use?): %w", cfg.BindAddress, err)
	}
	m.ml = ml
	return m, nil
}

func splitHostPort(hp, what string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("cluster: %s %q: write host:port: %w", what, hp, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("cluster: %s %q: the port must be 0-65535", what, hp)
	}
	return host, port, nil
}

// Join contacts the given members (host:port) and merges their view; it succeeds if
// one answered.
func (m *Members) Join(addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, nil
	}
	n, err := m.ml.Join(addrs)
	if err != nil && n == 0 {
		return 0, fmt.Errorf("cluster: join the fleet through %v: %w", addrs, err)
	}
	return n, nil
}

// Addr is this node's gossip address (host:port), as others reach it.
func (m *Members) Addr() string {
	n := m.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// View is every member this node knows of, itself included, by name; dead and left
// members included.
func (m *Members) View() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Member, 0, len(m.view))
	for _, v := range m.view {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Alive is how many members (itself included) are alive, suspects included.
func (m *Members) Alive() int { return m.ml.NumMembers() }

// HealthScore is memberlist's awareness of its own health: 0 when the node keeps
// up with the protocol, higher when its probes go unanswered or it was suspected
// (a slow or overloaded node, whose own verdicts on others are then less reliable).
func (m *Members) HealthScore() int { return m.ml.GetHealthScore() }

// Changes signals after any change of the view (one signal for any number).
func (m *Members) Changes() <-chan struct{} { return m.changes }

// leavingMsg, followed by a name, tells a member that node is leaving.
const leavingMsg = "fibfleet-leaving:"

// leaveWord is how long a member's word that it leaves explains its departure.
const leaveWord = 10 * time.Second

// Leave tells the others this node is leaving (they see it as left, not dead), then
// stops gossip.
func (m *Members) Leave(timeout time.Duration) error {
	self := m.ml.LocalNode().Name
	for _, n := range m.ml.Members() {
		if n.Name != self {
			_ = m.ml.SendReliable(n, []byte(leavingMsg+self)) // best effort: else it looks dead
		}
	}
	err := m.ml.Leave(timeout)
	return errors.Join(err, m.ml.Shutdown())
}

// Shutdown stops gossip without a word: to the others, this node crashed.
func (m *Members) Shutdown() error { return m.ml.Shutdown() }

// The memberlist.EventDelegate: the view follows every event.

// memberlist's NotifyLeave does not say whether a member left or died (the node's
// state field it passes is not kept up to date), so a leaving node tells each member
// itself first (Leave), and a leave without that word is a death.

func (m *Members) NotifyJoin(n *memberlist.Node)   { m.note(n, Alive) }
func (m *Members) NotifyUpdate(n *memberlist.Node) { m.note(n, Alive) }
func (m *Members) NotifyLeave(n *memberlist.Node) {
	m.mu.Lock()
	said, ok := m.leaving[n.Name]
	delete(m.leaving, n.Name)
	// A leave's departure follows its word within a second or so. A word older
	// than leaveWord never became a departure (the member came back first: a
	// restart refutes its own departure): it says nothing of this one.
	left := ok && time.Since(said) < leaveWord
	m.mu.Unlock()
	if left {
		m.note(n, Left)
	} else {
		m.note(n, Dead)
	}
}

func (m *Members) note(n *memberlist.Node, st MemberState) {
	var meta Meta
	if err := json.Unmarshal(n.Meta, &meta); err != nil && len(n.Meta) > 0 {
		m.log.Warn("member's metadata is not fibfleet's: ignored", "member", n.Name, "err", err)
	}
	m.mu.Lock()
	old := m.view[n.Name]
	v := &Member{Name: n.Name, Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port))), Meta: meta, State: st, Since: time.Now()}
	if old != nil && old.State == st {
		v.Since = old.Since
	}
	m.view[n.Name] = v
	m.mu.Unlock()
	if old == nil || old.State != st {
		m.log.Info("member "+string(st), "member", n.Name, "addr", v.Addr)
	}
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// The memberlist.Delegate: only metadata; fibfleet's shared state is in etcd.

func (m *Members) NodeMeta(int) []byte { return m.meta }
func (m *Members) NotifyMsg(b []byte) {
	if name, ok := strings.CutPrefix(string(b), leavingMsg); ok {
		m.mu.Lock()
		m.leaving[name] = time.Now()
		m.mu.Unlock()
	}
}
func (m *Members) GetBroadcasts(int, int) [][]byte     { return nil }
func (m *Members) LocalState(bool) []byte              { return nil }
func (m *Members) MergeRemoteState(buf []byte, _ bool) {}

// logWriter turns memberlist's "[LEVEL] memberlist: ..." lines into slog records.
type logWriter struct{ log *slog.Logger }

var _ io.Writer = (*logWriter)(nil)

func (w *logWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := slog.LevelInfo
	for prefix, l := range map[string]slog.Level{"[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo, "[WARN]": slog.LevelWarn, "[ERR]": slog.LevelError} {
		if strings.HasPrefix(line, prefix) {
			level, line = l, strings.TrimSpace(strings.TrimPrefix(line, prefix))
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	w.log.Log(context.Background(), level, line)
	return len(p), nil
}
