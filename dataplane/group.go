package dataplane

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/netip"
)

const (
	// GroupBuckets is how many buckets a next-hop group has: a flow's hash picks one
	// (xdp_fwd.c). 64 gives 16 members 4 buckets each, and weights in 64ths.
	GroupBuckets = 64
	// MaxGroups bounds next-hop group ids: valid ids are 1..MaxGroups-1 (the FIB's
	// answers; 0 is no route).
	MaxGroups = 65536
)

// NexthopGroup is what a route points to: each bucket holds a nexthop id, and a
// flow's hash picks the bucket. The caller (fib) keeps the buckets resilient: a member
// that leaves gives up its own buckets and no other. A group whose buckets are all 0
// has no usable member: its routes' traffic passes to the kernel (PassNoMember).
type NexthopGroup struct {
	Buckets [GroupBuckets]uint16
}

// Single is the group of one nexthop.
func Single(nh uint16) NexthopGroup {
	var g NexthopGroup
	for i := range g.Buckets {
		g.Buckets[i] = nh
	}
	return g
}

// members is how many distinct nexthops the buckets hold, as the program reads it:
// 0 (none), 1 (all buckets equal: no hash needed) or 2 (several).
func (g *NexthopGroup) members() uint16 {
	switch {
	case g.Buckets == NexthopGroup{}.Buckets:
		return 0
	case g.Buckets == Single(g.Buckets[0]).Buckets:
		return 1
	}
	return 2
}

// Pick is the nexthop id the program sends a flow of this hash to (0: none usable).
func (g *NexthopGroup) Pick(hash uint32) uint16 {
	return g.Buckets[hash&(GroupBuckets-1)]
}

// SetGroup writes a next-hop group in one map update. A lookup that reads it at the
// same moment may see old and new buckets mixed: each is a member of the old or the
// new set, so every id the caller ever wrote must stay a valid nexthop until no group
// holds it and a grace period has passed (fib does so).
func (d *Dataplane) SetGroup(id uint32, g NexthopGroup) error {
	if id == 0 || id >= MaxGroups {
		return fmt.Errorf("dataplane: next-hop group id %d out of range 1..%d", id, MaxGroups-1)
	}
	v := xdpfwdNhGroup{Members: g.members(), Bucket: g.Buckets}
	if err := d.objs.NhGroups.Put(&id, &v); err != nil {
		return fmt.Errorf("dataplane: set next-hop group %d: %w", id, err)
	}
	return nil
}

// DeleteGroup clears a group: routes still pointing at it pass to the kernel.
func (d *Dataplane) DeleteGroup(id uint32) error {
	return d.SetGroup(id, NexthopGroup{})
}

// Flow is what the flow hash reads from a packet.
type Flow struct {
	Src, Dst netip.Addr
	// Proto is the IPv4 protocol or the IPv6 next header, as the packet carries it
	// (an IPv6 fragment's is 44, its extension header).
	Proto uint8
	// Sport and Dport count for TCP and UDP only, and not in an IPv4 fragment.
	Sport, Dport uint16
	// Fragment says an IPv4 packet is a fragment (more fragments, or an offset).
	Fragment bool
}

// FlowHash is the hash xdp_fwd.c computes for a flow with a node's seed: the same
// bits, so that tools can say which member of a group a flow takes.
func FlowHash(seed uint32, f Flow) uint32 {
	h := seed
	words := func(b []byte) {
		for i := 0; i+4 <= len(b); i += 4 {
			// The program loads the packet's bytes as native-endian words.
			h = hashWord(h, binary.NativeEndian.Uint32(b[i:]))
		}
	}
	if f.Dst.Is4() {
		s, d := f.Src.As4(), f.Dst.As4()
		words(s[:])
		words(d[:])
	} else {
		// Each IPv6 address folded to one word, as the program does.
		fold := func(a [16]byte) uint32 {
			var x uint32
			for i := 0; i < 16; i += 4 {
				x ^= binary.NativeEndian.Uint32(a[i:])
			}
			return x
		}
		h = hashWord(h, fold(f.Src.As16()))
		h = hashWord(h, fold(f.Dst.As16()))
	}
	if (f.Proto == 6 || f.Proto == 17) && !(f.Dst.Is4() && f.Fragment) {
		var p [4]byte
		binary.BigEndian.PutUint16(p[:], f.Sport)
		binary.BigEndian.PutUint16(p[2:], f.Dport)
		words(p[:])
	}
	return dcHash32(hashWord(h, uint32(f.Proto)))
}

// hashWord is MurmurHash3's 32-bit block mixing (its finaliser is dcHash32).
func hashWord(h, k uint32) uint32 {
	k *= 0xcc9e2d51
	k = k<<15 | k>>17
	k *= 0x1b873593
	h ^= k
	h = h<<13 | h>>19
	return h*5 + 0xe6546b64
}

// FlowSeedOf is a node's flow-hash seed, from its name: stable across restarts (a
// flow keeps its member), different from node to node.
func FlowSeedOf(node string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(node))
	return h.Sum32()
}
