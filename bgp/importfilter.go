package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fibfleet/fibfleet/rpki"
	"github.com/osrg/gobgp/v4/pkg/config/oc"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// ImportRules say what an upstream may announce. The zero value is the safe default
// for an eBGP upstream: no special-purpose or unallocated space, IPv4 from /8 to /24
// and IPv6 from /16 to /48 (within 2000::/3), no default route, no private or
// reserved AS in the path, at most 100 ASes, the neighbour's AS first, never an empty
// path or this router's own AS. Each check is switched off by its field. A route
// they refuse is treated as one the import policy rejected, and counted by reason.
type ImportRules struct {
	// Allow are prefixes accepted although in special-purpose space (a lab's
	// documentation prefixes), with the length checks still applied.
	Allow []netip.Prefix
	// DefaultRoute accepts 0.0.0.0/0 and ::/0.
	DefaultRoute bool
	// AnyLength turns the length checks off.
	AnyLength bool
	// PrivateASNs accepts private ASNs (64512-65534, 4200000000-4294967294) in the
	// path; reserved ones (0, AS_TRANS 23456, 65535, documentation, ...) never pass.
	PrivateASNs bool
	// MaxPathLength bounds the AS path (0: 100).
	MaxPathLength int
	// AnyFirstAS accepts a path whose first AS is not the neighbour's (a route server
	// that does not prepend itself).
	AnyFirstAS bool
	// Prefixes, when set, is the neighbour's prefix list: only routes inside one of
	// its entries, no longer than the entry's MaxLength, pass (a customer's or a
	// peer's registered prefixes).
	Prefixes []PrefixRange
	// OriginASNs, when set, is the only origin ASes accepted (the path's last AS);
	// DenyASNs are ASes no accepted path may contain. Both are range checks on the
	// path, not regular expressions.
	OriginASNs, DenyASNs []uint32
	// Blackholes accepts routes carrying BLACKHOLE (RFC 7999) from this neighbour:
	// their traffic is dropped. Such a route may be as long as /32 or /128 (the
	// too-long check and the prefix list's longest length do not apply to it; the
	// prefix list's space still does) and is not origin-validated (a blackhole is
	// longer than any ROA allows). Without it, a route carrying BLACKHOLE is refused
	// (reason blackhole_not_allowed): neither dropped nor forwarded.
	Blackholes bool
}

// PrefixRange is a prefix list entry: the prefix and the routes within it up to
// MaxLength bits (0: the prefix's own length only).
type PrefixRange struct {
	Prefix    netip.Prefix
	MaxLength int
}

func (r PrefixRange) contains(p netip.Prefix, blackhole bool) bool {
	max := r.MaxLength
	switch {
	case blackhole:
		max = p.Addr().BitLen()
	case max == 0:
		max = r.Prefix.Bits()
	}
	return r.Prefix.Addr().Is4() == p.Addr().Is4() && r.Prefix.Bits() <= p.Bits() && p.Bits() <= max && r.Prefix.Contains(p.Addr())
}

// Reasons a route is refused, as counted in metrics.
const (
	ReasonSpecialPurpose = "special_purpose"
	ReasonTooLong        = "too_long"
	ReasonTooShort       = "too_short"
	ReasonDefaultRoute   = "default_route"
	ReasonPrivateASN     = "private_asn"
	ReasonReservedASN    = "reserved_asn"
	ReasonPathTooLong    = "path_too_long"
	ReasonFirstAS        = "first_as_not_neighbor"
	ReasonEmptyPath      = "empty_path"
	ReasonOwnAS          = "own_as"
	ReasonOwnPrefix      = "own_prefix"
	ReasonPrefixList     = "prefix_list"
	ReasonOriginAS       = "origin_as"
	ReasonDeniedAS       = "denied_asn"
	ReasonRPKIInvalid    = "rpki_invalid"
	ReasonBlackhole      = "blackhole_not_allowed"
)

// Reasons lists every reason, for metrics (an array: its length sizes the counters).
var Reasons = [...]string{ReasonSpecialPurpose, ReasonTooLong, ReasonTooShort, ReasonDefaultRoute, ReasonPrivateASN, ReasonReservedASN,
	ReasonPathTooLong, ReasonFirstAS, ReasonEmptyPath, ReasonOwnAS, ReasonOwnPrefix, ReasonPrefixList, ReasonOriginAS, ReasonDeniedAS, ReasonRPKIInvalid, ReasonBlackhole}

// specialPurpose is IANA's special-purpose address space (RFC 6890 and its
// registries, as of 2026) that is not globally reachable, with multicast and the
// reserved class E for IPv4; IPv6 outside 2000::/3 is unallocated and refused apart
// from this list. Special-purpose blocks that are globally reachable stay out of it:
// Teredo (2001::/32) and AS112 (2001:4:112::/48) are routed in the 2026 table.
var specialPurpose = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24",
		"192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"2001:2::/48", "2001:10::/28", "2001:db8::/32", "3fff::/20",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// check returns why a route from a neighbour of AS peerAS is refused ("" to accept);
// ownAS is this router's. blackhole says the route carries BLACKHOLE.
func (r *ImportRules) check(p netip.Prefix, peerAS, ownAS uint32, path *bgp.PathAttributeAsPath, blackhole bool) string {
	if blackhole && !r.Blackholes {
		return ReasonBlackhole
	}
	if p.Bits() == 0 {
		if r.DefaultRoute {
			return ""
		}
		return ReasonDefaultRoute
	}
	allowed := false
	for _, a := range r.Allow {
		if a.Bits() <= p.Bits() && a.Contains(p.Addr()) {
			allowed = true
			break
		}
	}
	if !allowed {
		if p.Addr().Is6() && !(globalUnicast6.Bits() <= p.Bits() && globalUnicast6.Contains(p.Addr())) {
			return ReasonSpecialPurpose
		}
		for _, s := range specialPurpose {
			if s.Bits() <= p.Bits() && s.Contains(p.Addr()) {
				return ReasonSpecialPurpose
			}
		}
	}
	if len(r.Prefixes) > 0 && !slices.ContainsFunc(r.Prefixes, func(e PrefixRange) bool { return e.contains(p, blackhole) }) {
		return ReasonPrefixList
	}
	if !r.AnyLength {
		lo, hi := 8, 24
		if p.Addr().Is6() {
			lo, hi = 16, 48
		}
		switch {
		case p.Bits() > hi && !blackhole:
			return ReasonTooLong
		case p.Bits() < lo:
			return ReasonTooShort
		}
	}
	return r.checkPath(peerAS, ownAS, path)
}

func (r *ImportRules) checkPath(peerAS, ownAS uint32, path *bgp.PathAttributeAsPath) string {
	n, first, last := 0, uint32(0), uint32(0)
	if path != nil {
		for i, param := range path.Value {
			ases := param.GetAS()
			if i == 0 && param.GetType() == bgp.BGP_ASPATH_ATTR_TYPE_SEQ && len(ases) > 0 {
				first = ases[0]
			}
			if i == len(path.Value)-1 && param.GetType() == bgp.BGP_ASPATH_ATTR_TYPE_SEQ && len(ases) > 0 {
				last = ases[len(ases)-1] // an AS_SET at the end has no single origin
			}
			if param.GetType() == bgp.BGP_ASPATH_ATTR_TYPE_SET {
				n++
			} else {
				n += len(ases)
			}
			for _, as := range ases {
				switch {
				case as == ownAS:
					return ReasonOwnAS
				case reservedASN(as):
					return ReasonReservedASN
				case privateASN(as) && !r.PrivateASNs:
					return ReasonPrivateASN
				case len(r.DenyASNs) > 0 && slices.Contains(r.DenyASNs, as):
					return ReasonDeniedAS
				}
			}
		}
	}
	max := r.MaxPathLength
	if max == 0 {
		max = 100
	}
	switch {
	case n == 0:
		return ReasonEmptyPath
	case n > max:
		return ReasonPathTooLong
	case !r.AnyFirstAS && first != peerAS:
		return ReasonFirstAS
	case len(r.OriginASNs) > 0 && !slices.Contains(r.OriginASNs, last):
		return ReasonOriginAS
	}
	return ""
}

func privateASN(as uint32) bool {
	return as >= 64512 && as <= 65534 || as >= 4200000000 && as <= 4294967294
}

// reservedASN: 0, AS_TRANS, the last 16-bit AS, documentation (RFC 5398), the IANA
// reserved 65552-131071 and the last 32-bit AS.
func reservedASN(as uint32) bool {
	return as == 0 || as == 23456 || as == 65535 || as >= 64496 && as <= 64511 || as >= 65536 && as <= 131071 || as == 4294967295
}

// importFilter holds each upstream's rules and counts what they refuse; GoBGP calls
// accept (patch 4) for every path a neighbour announces, concurrently.
type importFilter struct {
	ownAS uint32
	mu    sync.RWMutex
	rules map[netip.Addr]*ImportRules // upstreams with rules; others (the mesh) pass
	// refused counts per neighbour and reason; kept across rule changes. held are
	// the prefixes refused now.
	refused map[netip.Addr]*[len(Reasons)]atomic.Uint64
	held    map[netip.Addr]*refusedSet
	// own are the prefixes this node originates (SetOriginated): an upstream's route
	// inside one is refused.
	own atomic.Pointer[[]netip.Prefix]
	// rov validates route origins (SetOriginValidation; nil: none), and states
	// counts its answers for the routes the other rules accept.
	rov    atomic.Pointer[originValidation]
	states [len(rpki.States)]atomic.Uint64
}

// OriginValidator answers a route's RPKI state (rpki.Union).
type OriginValidator interface {
	Validate(route netip.Prefix, origin uint32) rpki.State
}

type originValidation struct {
	v OriginValidator
	// reject refuses invalid routes; else they are accepted, marked (counted, shown),
	// and with InvalidLower given a lower local preference by the import policy.
	reject bool
}

// InvalidAction is what becomes of an RPKI-invalid route.
type InvalidAction int

const (
	// InvalidReject refuses it (reason rpki_invalid).
	InvalidReject InvalidAction = iota
	// InvalidMark takes it as any other: counted, and shown with its state.
	InvalidMark
	// InvalidLower takes it with a lower local preference: any valid or not-found
	// path for the prefix wins, and the invalid one carries the traffic only when
	// it is the only path (the FIB keeps the prefix reachable).
	InvalidLower
)

// originState answers a path's validation state for GoBGP's policy conditions
// (patch 6): as the import filter does, for paths with an origin AS; a path from
// inside the AS (an empty path) is not validated.
func (f *importFilter) originState(_ bgp.Family, nlri bgp.NLRI, attrs []bgp.PathAttributeInterface) oc.RpkiValidationResultType {
	rov := f.rov.Load()
	n, ok := nlri.(*bgp.IPAddrPrefix)
	if rov == nil || !ok {
		return oc.RPKI_VALIDATION_RESULT_TYPE_NONE
	}
	path := asPathOf(attrs)
	origin := originAS(path)
	if origin == 0 && (path == nil || len(path.Value) == 0) {
		return oc.RPKI_VALIDATION_RESULT_TYPE_NOT_FOUND
	}
	switch rov.v.Validate(n.Prefix, origin) {
	case rpki.Valid:
		return oc.RPKI_VALIDATION_RESULT_TYPE_VALID
	case rpki.Invalid:
		return oc.RPKI_VALIDATION_RESULT_TYPE_INVALID
	}
	return oc.RPKI_VALIDATION_RESULT_TYPE_NOT_FOUND
}

func (f *importFilter) setOwn(ps []netip.Prefix) {
	c := slices.Clone(ps)
	f.own.Store(&c)
}

func (f *importFilter) ownPrefixes() []netip.Prefix {
	if p := f.own.Load(); p != nil {
		return *p
	}
	return nil
}

var reasonIndex = func() map[string]int {
	m := map[string]int{}
	for i, r := range Reasons {
		m[r] = i
	}
	return m
}()

func newImportFilter(ownAS uint32) *importFilter {
	return &importFilter{ownAS: ownAS, rules: map[netip.Addr]*ImportRules{}, refused: map[netip.Addr]*[len(Reasons)]atomic.Uint64{},
		held: map[netip.Addr]*refusedSet{}}
}

// set gives a neighbour its rules (nil: it is not filtered).
func (f *importFilter) set(a netip.Addr, r *ImportRules) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r == nil {
		delete(f.rules, a)
		delete(f.held, a)
		return
	}
	f.rules[a] = r
	if f.refused[a] == nil {
		f.refused[a] = &[len(Reasons)]atomic.Uint64{}
	}
	if f.held[a] == nil {
		f.held[a] = &refusedSet{m: map[[17]byte]struct{}{}}
	}
}

func (f *importFilter) accept(peer netip.Addr, peerAS uint32, _ bgp.Family, nlri bgp.NLRI, attrs []bgp.PathAttributeInterface) bool {
	n, ok := nlri.(*bgp.IPAddrPrefix)
	if !ok {
		return true // only unicast is configured
	}
	why := f.reason(peer, peerAS, n.Prefix, attrs)
	if why == "" {
		f.mu.RLock()
		held := f.held[peer]
		f.mu.RUnlock()
		if held != nil {
			held.forget(n.Prefix)
		}
		return true
	}
	f.mu.RLock()
	counts, held := f.refused[peer], f.held[peer]
	f.mu.RUnlock()
	if counts != nil && held != nil { // else the neighbour was removed meanwhile
		counts[reasonIndex[why]].Add(1)
		held.add(n.Prefix)
	}
	return false
}

// withdrawn forgets a prefix the neighbour withdrew.
func (f *importFilter) withdrawn(peer netip.Addr, p netip.Prefix) {
	f.mu.RLock()
	held := f.held[peer]
	f.mu.RUnlock()
	if held != nil {
		held.forget(p)
	}
}

// reason says why the neighbour's rules refuse a route ("" when they accept it, or
// the neighbour has none).
func (f *importFilter) reason(peer netip.Addr, peerAS uint32, p netip.Prefix, attrs []bgp.PathAttributeInterface) string {
	f.mu.RLock()
	r := f.rules[peer]
	f.mu.RUnlock()
	if r == nil {
		return ""
	}
	blackhole := hasBlackhole(attrs)
	// A blackhole inside the fleet's own prefixes, from a neighbour allowed to send
	// one, is what blackholes are for (an attacked address of the fleet's).
	for _, o := range f.ownPrefixes() {
		if o.Bits() <= p.Bits() && o.Contains(p.Addr()) && !(blackhole && r.Blackholes) {
			return ReasonOwnPrefix // before any other: the most telling
		}
	}
	path := asPathOf(attrs)
	if why := r.check(p, peerAS, f.ownAS, path, blackhole); why != "" {
		return why
	}
	if rov := f.rov.Load(); rov != nil && !blackhole {
		st := rov.v.Validate(p, originAS(path))
		f.states[st].Add(1)
		if st == rpki.Invalid && rov.reject {
			return ReasonRPKIInvalid
		}
	}
	return ""
}

// asPathOf is a path's AS_PATH attribute (nil: none).
func asPathOf(attrs []bgp.PathAttributeInterface) *bgp.PathAttributeAsPath {
	for _, a := range attrs {
		if ap, ok := a.(*bgp.PathAttributeAsPath); ok {
			return ap
		}
	}
	return nil
}

// originAS is a path's origin: its last AS, 0 (none: never valid) when the path ends
// with an AS_SET or is empty.
func originAS(path *bgp.PathAttributeAsPath) uint32 {
	if path == nil || len(path.Value) == 0 {
		return 0
	}
	last := path.Value[len(path.Value)-1]
	ases := last.GetAS()
	if last.GetType() != bgp.BGP_ASPATH_ATTR_TYPE_SEQ || len(ases) == 0 {
		return 0
	}
	return ases[len(ases)-1]
}

// SetOriginValidation validates the origin of every route an upstream with import
// rules announces from its next update on (v nil: no more), and does with invalid
// ones what action says; InvalidLower gives them local preference lowerPref (below
// the default 100, and below what import actions give the upstreams) through the
// import policy, replaced at once.
func (s *Speaker) SetOriginValidation(ctx context.Context, v OriginValidator, action InvalidAction, lowerPref uint32) error {
	if v == nil {
		s.importFilter.rov.Store(nil)
	} else {
		s.importFilter.rov.Store(&originValidation{v: v, reject: action == InvalidReject})
	}
	s.mu.Lock()
	was := s.invalidPref
	s.invalidPref = 0
	if v != nil && action == InvalidLower {
		s.invalidPref = lowerPref
	}
	changed := was != s.invalidPref
	s.mu.Unlock()
	if !changed {
		return nil
	}
	return s.applyImport(ctx)
}

// OriginStates counts the RPKI states of the routes validated since the node
// started (each announcement once, and again when a VRP change re-checks it).
func (s *Speaker) OriginStates() map[string]uint64 {
	out := map[string]uint64{}
	for _, st := range rpki.States {
		out[st.String()] = s.importFilter.states[st].Load()
	}
	return out
}

// ReimportWithin checks again every route the neighbours announced within the given
// prefixes (GoBGP patch 5): what a VRP change covers.
func (s *Speaker) ReimportWithin(ctx context.Context, prefixes []netip.Prefix) error {
	if len(prefixes) == 0 {
		return nil
	}
	if err := s.srv.ReimportWithin(ctx, prefixes); err != nil {
		return fmt.Errorf("bgp: check again the routes within %d prefixes: %w", len(prefixes), err)
	}
	return nil
}

// refusedSet is the prefixes of a neighbour its rules refuse now: a prefix
// leaves it when the neighbour withdraws it or sends it again acceptably. Refused
// routes are few (bogons, leaks), so a set is cheap where counting accepted ones
// would cost another full table.
type refusedSet struct {
	mu sync.Mutex
	m  map[[17]byte]struct{}
}

func (r *refusedSet) add(p netip.Prefix) {
	r.mu.Lock()
	r.m[prefixKey(p)] = struct{}{}
	r.mu.Unlock()
}

func (r *refusedSet) forget(p netip.Prefix) {
	r.mu.Lock()
	delete(r.m, prefixKey(p))
	r.mu.Unlock()
}

func (r *refusedSet) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// Refused returns, per upstream with import rules, the routes refused by reason since
// the node started.
func (s *Speaker) Refused() map[netip.Addr]map[string]uint64 {
	f := s.importFilter
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[netip.Addr]map[string]uint64{}
	for a, c := range f.refused {
		m := map[string]uint64{}
		for r, i := range reasonIndex {
			m[r] = c[i].Load()
		}
		out[a] = m
	}
	return out
}

// RefusedNow counts, per upstream with import rules, the prefixes its rules refuse
// now (announced, refused, not withdrawn since).
func (s *Speaker) RefusedNow() map[netip.Addr]int {
	f := s.importFilter
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[netip.Addr]int, len(f.held))
	for a, h := range f.held {
		out[a] = h.len()
	}
	return out
}
