//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fibfleet's XDP forwarding program (IPv4 and IPv6).
 *
 * Steps, in order: parse Ethernet and IPv4 or IPv6 with bounds checks, hand anything
 * that is not plainly forwardable to the kernel (each case with its own counter), look
 * the destination up in the family's FIB (the destination cache, dcache.h, answers
 * first when it holds the destination), follow the answer, a next-hop group id, to the
 * group, pick its member for the packet's flow, follow the member's nexthop id to the
 * nexthop entry (one table for both families), check the egress MTU and port, then
 * decrement TTL or hop limit, rewrite MACs and redirect.
 *
 * Every return goes through count(): a fallback that nobody can see is a bug.
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

/* Stat indices: one per action and pass reason. Keep in sync with dataplane/stats.go. */
enum stat_reason {
	STAT_FORWARDED = 0,     /* XDP_REDIRECT to the nexthop's egress port */
	STAT_PASS_NOT_IPV4,     /* neither IPv4 nor IPv6 (ARP, LLDP, ...): the kernel's business */
	STAT_PASS_VLAN,         /* 802.1ad (QinQ) or double tagged, or no headroom to push a tag */
	STAT_PASS_MALFORMED,    /* truncated or inconsistent headers: the kernel validates and drops */
	STAT_PASS_IP_OPTIONS,   /* IHL != 5: options need the kernel's slow path */
	STAT_PASS_TTL,          /* TTL <= 1 (not to us): the kernel sends ICMP time exceeded */
	STAT_PASS_MULTICAST,    /* multicast or limited broadcast: never forwarded by the FIB */
	STAT_PASS_LOCAL,        /* to one of the node's own addresses (BGP sessions, ssh, ...) */
	STAT_PASS_NO_ROUTE,     /* no FIB entry: the kernel decides (and counts) */
	STAT_PASS_UNRESOLVED,   /* nexthop neighbour not resolved yet: the kernel resolves it */
	STAT_PASS_MTU,          /* larger than the egress MTU: the kernel fragments or sends ICMP
	                         * frag-needed; a devmap would drop it silently and black-hole PMTUD */
	STAT_PASS_NO_TXPORT,    /* egress interface missing from the devmap */
	STAT_PASS_FIB_FULL,     /* the /24 holds a route the FIB had no room for: the kernel's */
	STAT_DROP_INTERNAL,     /* headers vanished after a tag push/pop: a program bug, never expected */
	STAT_FORWARDED_V6,      /* IPv6, XDP_REDIRECT to the nexthop's egress port */
	STAT_PASS_HOP_BY_HOP,   /* IPv6 hop-by-hop options: every router must read them */
	STAT_PASS_LINK_LOCAL,   /* IPv6 link-local (or unspecified, loopback) destination: never routed */
	STAT_DROP_BLACKHOLE,    /* the route's nexthop is the discard nexthop (RFC 7999 blackhole) */
	STAT_PASS_NO_MEMBER,    /* the route's next-hop group has no usable member (all down): the kernel's */
	STAT_PASS_STALE,        /* the node's heartbeat is past its deadline: no control plane has kept
	                         * this FIB for the restart time, so the kernel forwards everything */
	STAT_MAX,
};

struct stat_rec {
	__u64 packets;
	__u64 bytes;
};

/* Nexthop flags. */
#define NH_F_VALID 0x1
#define NH_F_RESOLVED 0x2
#define NH_F_DROP 0x4 /* the discard nexthop: a blackholed route's traffic is dropped here */

/* A nexthop entry: everything the rewrite needs, so a hit costs one array lookup. */
struct nexthop {
	__u32 ifindex; /* egress port: the parent of a VLAN sub-interface */
	__u8 smac[ETH_ALEN];
	__u8 dmac[ETH_ALEN];
	__u16 mtu; /* L3 MTU of the egress interface */
	__u16 flags;
	__u16 vlan; /* 802.1Q VLAN id to send with, 0 for untagged */
	__u16 pad;
};

struct vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

#define VLAN_HLEN 4
#define VLAN_VID_MASK 0x0fff

#define MAX_NEXTHOPS 65536

/*
 * A next-hop group: what a route points to (the FIB's and the cache's answer is a
 * group id, never a member, so no cached member outlives a failover). Its buckets
 * hold nexthop ids; a flow's hash picks one (a resilient bucket table as Linux's
 * nexthop groups: userspace moves only the buckets of a member that leaves or
 * returns). Userspace rewrites a group in one map update; a lookup that reads it
 * meanwhile may see old and new buckets mixed, each of them a member of the old or
 * the new set, which is why every bucket always holds a valid id.
 */
#define GROUP_BUCKETS 64
#define MAX_GROUPS 65536

struct nh_group {
	__u16 members; /* distinct ids in bucket[]: 0 none usable (pass), 1 all equal (no hash) */
	__u16 pad[3];
	__u16 bucket[GROUP_BUCKETS];
};

#include "fib4.h"
#include "fib6.h"
#include "cached.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct nexthop);
	__uint(max_entries, MAX_NEXTHOPS);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} nexthops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct nh_group);
	__uint(max_entries, MAX_GROUPS);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} nh_groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
	__uint(max_entries, 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} tx_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __be32);
	__type(value, __u8);
	__uint(max_entries, 4096);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} local_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct in6_addr);
	__type(value, __u8);
	__uint(max_entries, 4096);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} local_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stat_rec);
	__uint(max_entries, STAT_MAX);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} stats SEC(".maps");

/* The node's heartbeat: the CLOCK_MONOTONIC time (ns) until which this program's FIB
 * is trusted. The node pushes it forward every second by the restart time; a node
 * killed and never restarted (uninstalled without --uninstall) stops pushing it, and
 * once it passes every frame goes to the kernel instead of following a FIB nobody
 * maintains. 0 means no deadline. Pinned, so that the next process can keep an
 * adopted FIB alive while it builds its own. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} heartbeat SEC(".maps");

/* Which FIB the program forwards from; set by the loader (fib.backend). */
#define FIB_BACKEND_COMPILED 0
#define FIB_BACKEND_KERNEL 1
volatile const __u32 fib_backend = FIB_BACKEND_COMPILED;

/* Seeds the flow hash; each node has its own (set by the loader), so that the fleet's
 * nodes, one behind the other, do not all pick the same member for a flow
 * (polarisation). dataplane/flow.go computes the same hash. */
volatile const __u32 flow_seed = 0;

static __always_inline int count(__u32 reason, __u64 bytes, int action)
{
	struct stat_rec *rec = bpf_map_lookup_elem(&stats, &reason);

	if (rec) {
		rec->packets++;
		rec->bytes += bytes;
	}
	return action;
}

/* RFC 1624 incremental checksum update for a TTL decrement, as the kernel's ip_decrease_ttl. */
static __always_inline void ip_decrease_ttl(struct iphdr *iph)
{
	__u32 check = (__u32)iph->check;

	check += (__u32)bpf_htons(0x0100);
	iph->check = (__u16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

/* What parsing learned about a frame, for the steps after the lookup. */
struct frame {
	__u64 len;      /* bytes, for the counters */
	void *l3;       /* the IP header, for the flow hash */
	void *end;      /* the frame's end */
	__u32 l3len;    /* the IP packet's length, for the MTU check */
	__u16 in_tci;   /* the incoming 802.1Q tag, if tagged */
	__u16 proto;    /* ETH_P_IP or ETH_P_IPV6 */
	int tagged;
};

#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

/* The flow hash: MurmurHash3's 32-bit mixing over the words of the flow (addresses,
 * an IPv6 one folded to a word, and the ports word as they sit in the packet), then
 * its finaliser (dc_hash32). */
static __always_inline __u32 hash_word(__u32 h, __u32 k)
{
	k *= 0xcc9e2d51;
	k = (k << 15) | (k >> 17);
	k *= 0x1b873593;
	h ^= k;
	h = (h << 13) | (h >> 19);
	return h * 5 + 0xe6546b64;
}

/* flow_hash hashes the packet's 5-tuple (TCP and UDP, not fragmented) or 3-tuple
 * (fragments, other protocols, IPv6 with extension headers: their ports are not at
 * a fixed place, and a fragment's later pieces have none), so a flow's packets all
 * take one member. Parsing already bounded the IP header. */
static __always_inline __u32 flow_hash(struct frame *f)
{
	__u32 h = flow_seed, *ports = 0;
	__u8 proto;

	if (f->proto == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = f->l3;

		if ((void *)(ip6 + 1) > f->end)
			return 0;
		/* Each address folded to a word first (as Linux's ipv6_addr_hash): two
		 * rounds instead of eight; the words' differences survive the XOR. */
		h = hash_word(h, ip6->saddr.s6_addr32[0] ^ ip6->saddr.s6_addr32[1] ^ ip6->saddr.s6_addr32[2] ^ ip6->saddr.s6_addr32[3]);
		h = hash_word(h, ip6->daddr.s6_addr32[0] ^ ip6->daddr.s6_addr32[1] ^ ip6->daddr.s6_addr32[2] ^ ip6->daddr.s6_addr32[3]);
		proto = ip6->nexthdr;
		if (proto == IPPROTO_TCP || proto == IPPROTO_UDP)
			ports = (void *)(ip6 + 1);
	} else {
		struct iphdr *iph = f->l3;

		if ((void *)(iph + 1) > f->end)
			return 0;
		h = hash_word(h, iph->saddr);
		h = hash_word(h, iph->daddr);
		proto = iph->protocol;
		/* More fragments or an offset: a fragment (IHL is 5 here: options passed). */
		if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP) && !(iph->frag_off & bpf_htons(0x3fff)))
			ports = (void *)(iph + 1);
	}
	if (ports && (void *)(ports + 1) <= f->end)
		h = hash_word(h, *ports);
	return dc_hash32(hash_word(h, proto));
}

/* egress checks the MTU and port, fixes the VLAN tag, decrements TTL or hop limit,
 * rewrites MACs and redirects: the same for both families. */
static __always_inline int egress(struct xdp_md *ctx, struct nexthop *nh, struct frame *f)
{
	void *data_end, *data;
	struct ethhdr *eth;
	struct vlan_hdr *vh;
	__u32 l3off;
	__u16 out_vid;
	int v6 = f->proto == ETH_P_IPV6;

	if (f->l3len > nh->mtu)
		return count(STAT_PASS_MTU, f->len, XDP_PASS);
	/* Check the port before touching the frame: a pass after the rewrite would hand
	 * the kernel a frame with our MACs and a decremented TTL. */
	if (!bpf_map_lookup_elem(&tx_ports, &nh->ifindex))
		return count(STAT_PASS_NO_TXPORT, f->len, XDP_PASS);

	/* A nexthop on a VLAN sub-interface egresses on its parent with the tag in the
	 * frame (XDP cannot redirect into a VLAN device): push, pop or rewrite it. */
	out_vid = nh->vlan & VLAN_VID_MASK;
	if (f->tagged != (out_vid != 0)) {
		if (bpf_xdp_adjust_head(ctx, f->tagged ? VLAN_HLEN : -VLAN_HLEN))
			return count(STAT_PASS_VLAN, f->len, XDP_PASS); /* no headroom: frame untouched */
	}
	data_end = (void *)(long)ctx->data_end;
	data = (void *)(long)ctx->data;
	eth = data;
	l3off = out_vid ? ETH_HLEN + VLAN_HLEN : ETH_HLEN;
	if (data + l3off + (v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) > data_end)
		return count(STAT_DROP_INTERNAL, f->len, XDP_DROP); /* cannot happen: keeps the verifier sure */
	if (out_vid) {
		vh = (void *)(eth + 1);
		eth->h_proto = bpf_htons(ETH_P_8021Q);
		/* Keep the priority bits of an incoming tag; a pushed tag has priority 0. */
		vh->tci = bpf_htons((f->in_tci & ~VLAN_VID_MASK) | out_vid);
		vh->encap_proto = bpf_htons(f->proto);
	} else {
		eth->h_proto = bpf_htons(f->proto);
	}
	if (v6)
		((struct ipv6hdr *)(data + l3off))->hop_limit--; /* no checksum in IPv6 */
	else
		ip_decrease_ttl(data + l3off);
	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
	return count(v6 ? STAT_FORWARDED_V6 : STAT_FORWARDED, f->len, bpf_redirect_map(&tx_ports, nh->ifindex, 0));
}

/* route_to forwards to the group a FIB lookup answered: picks the flow's member (no
 * hash when the group has one), drops for the discard nexthop (a blackhole: dropped
 * here, at line rate, before any rewrite), passes to the kernel while the member's
 * neighbour is unresolved or when no member is usable. */
static __always_inline int route_to(struct xdp_md *ctx, __u32 gid, struct frame *f)
{
	struct nh_group *g = bpf_map_lookup_elem(&nh_groups, &gid);
	struct nexthop *nh;
	__u32 nhid;

	if (!g || !g->members)
		return count(STAT_PASS_NO_MEMBER, f->len, XDP_PASS);
	nhid = g->bucket[0];
	if (g->members > 1)
		nhid = g->bucket[flow_hash(f) & (GROUP_BUCKETS - 1)];
	nh = bpf_map_lookup_elem(&nexthops, &nhid);

	if (nh && (nh->flags & (NH_F_VALID | NH_F_DROP)) == (NH_F_VALID | NH_F_DROP))
		return count(STAT_DROP_BLACKHOLE, f->len, XDP_DROP);
	if (!nh || (nh->flags & (NH_F_VALID | NH_F_RESOLVED)) != (NH_F_VALID | NH_F_RESOLVED))
		return count(STAT_PASS_UNRESOLVED, f->len, XDP_PASS);
	return egress(ctx, nh, f);
}

/* kernel_nexthop fills knh from a successful bpf_fib_lookup (the kernel backend). */
static __always_inline struct nexthop *kernel_nexthop(struct nexthop *knh, struct bpf_fib_lookup *p)
{
	knh->ifindex = p->ifindex;
	__builtin_memcpy(knh->smac, p->smac, ETH_ALEN);
	__builtin_memcpy(knh->dmac, p->dmac, ETH_ALEN);
	knh->mtu = 0xffff; /* checked by the helper */
	knh->flags = NH_F_VALID | NH_F_RESOLVED;
	knh->vlan = 0;
	knh->pad = 0;
	return knh;
}

/* kernel_verdict counts a failed bpf_fib_lookup; 0 on success. */
static __always_inline int kernel_failed(long rc, struct frame *f)
{
	if (rc == BPF_FIB_LKUP_RET_SUCCESS)
		return 0;
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return count(STAT_PASS_UNRESOLVED, f->len, XDP_PASS) + 1;
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return count(STAT_PASS_MTU, f->len, XDP_PASS) + 1;
	/* The kernel sync mirrors a blackholed route as a blackhole route. */
	if (rc == BPF_FIB_LKUP_RET_BLACKHOLE)
		return count(STAT_DROP_BLACKHOLE, f->len, XDP_DROP) + 1;
	/* no route, unreachable, prohibited, not forwarded, forwarding off */
	return count(STAT_PASS_NO_ROUTE, f->len, XDP_PASS) + 1;
}

static __always_inline int forward4(struct xdp_md *ctx, struct iphdr *iph, void *data_end, struct frame *f)
{
	struct dc_miss m = {};
	struct dc_config *c;
	struct nexthop *nh, knh;
	__be32 daddr;
	__u32 gid;
	__u16 tot_len;

	if ((void *)(iph + 1) > data_end)
		return count(STAT_PASS_MALFORMED, f->len, XDP_PASS);
	if (iph->version != 4 || iph->ihl < 5)
		return count(STAT_PASS_MALFORMED, f->len, XDP_PASS);
	if (iph->ihl != 5)
		return count(STAT_PASS_IP_OPTIONS, f->len, XDP_PASS);
	tot_len = bpf_ntohs(iph->tot_len);
	if (tot_len < sizeof(*iph) || tot_len > data_end - (void *)iph)
		return count(STAT_PASS_MALFORMED, f->len, XDP_PASS);
	f->l3len = tot_len;
	f->l3 = iph;
	f->end = data_end;

	/* Local and multicast first: eBGP sessions arrive with TTL 1 and are not expiring. */
	daddr = iph->daddr;
	if ((daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000) || daddr == 0xffffffff)
		return count(STAT_PASS_MULTICAST, f->len, XDP_PASS);
	if (bpf_map_lookup_elem(&local_v4, &daddr))
		return count(STAT_PASS_LOCAL, f->len, XDP_PASS);
	if (iph->ttl <= 1)
		return count(STAT_PASS_TTL, f->len, XDP_PASS);

	m.h = dc_hash32(bpf_ntohl(daddr));
	c = dc_begin(DC_V4, m.h);
	if (fib_backend == FIB_BACKEND_KERNEL) {
		/* The in-product baseline: the kernel's FIB through bpf_fib_lookup(), as
		 * xdp-forward does. Routes must be in the kernel (fib.kernel_sync). Its
		 * answers are MACs, which the cache (nexthop ids) does not hold. */
		struct bpf_fib_lookup p = {};
		int rc;

		dc_count(DC_V4, DC_BYPASS);
		p.family = AF_INET;
		p.tos = iph->tos;
		p.l4_protocol = iph->protocol;
		p.tot_len = tot_len;
		p.ipv4_src = iph->saddr;
		p.ipv4_dst = daddr;
		p.ifindex = ctx->ingress_ifindex;
		rc = kernel_failed(bpf_fib_lookup(ctx, &p, sizeof(p), 0), f);
		if (rc)
			return rc - 1;
		nh = kernel_nexthop(&knh, &p);
	} else {
		int hit;

		gid = dc4_cached(c, &m, daddr, fib4_answer, 0, &hit);
		if (!gid)
			return count(STAT_PASS_NO_ROUTE, f->len, XDP_PASS);
		if (gid == FIB4_KERNEL)
			return count(STAT_PASS_FIB_FULL, f->len, XDP_PASS);
		return route_to(ctx, gid, f);
	}
	return egress(ctx, nh, f);
}

static __always_inline int forward6(struct xdp_md *ctx, struct ipv6hdr *ip6, void *data_end, struct frame *f)
{
	struct dc_miss m = {};
	struct dc_config *c;
	struct nexthop *nh, knh;
	__u32 gid, d0;
	__u16 plen;

	if ((void *)(ip6 + 1) > data_end)
		return count(STAT_PASS_MALFORMED, f->len, XDP_PASS);
	if (ip6->version != 6)
		return count(STAT_PASS_MALFORMED, f->len, XDP_PASS);
	plen = bpf_ntohs(ip6->payload_len);
	/* A zero payload length is a jumbogram (hop-by-hop option): counted below. */
	if (plen && sizeof(*ip6) + plen > data_end - (void *)ip6)
		return count(STAT_PASS_MALFORMED, f->len, XDP_PASS);
	f->l3len = sizeof(*ip6) + plen;
	f->l3 = ip6;
	f->end = data_end;
	/* Every router must process hop-by-hop options (router alert, jumbo): the kernel.
	 * Other extension headers are for the destination: forwarded as they are. */
	if (ip6->nexthdr == IPPROTO_HOPOPTS)
		return count(STAT_PASS_HOP_BY_HOP, f->len, XDP_PASS);

	d0 = bpf_ntohl(ip6->daddr.s6_addr32[0]);
	if ((d0 >> 24) == 0xff)
		return count(STAT_PASS_MULTICAST, f->len, XDP_PASS);
	/* fe80::/10, and :: or ::1 (never valid as a forwarded destination). */
	if ((d0 & 0xffc00000) == 0xfe800000 ||
	    (!d0 && !ip6->daddr.s6_addr32[1] && !ip6->daddr.s6_addr32[2] &&
	     (ip6->daddr.s6_addr32[3] & ~bpf_htonl(1)) == 0))
		return count(STAT_PASS_LINK_LOCAL, f->len, XDP_PASS);
	if (bpf_map_lookup_elem(&local_v6, &ip6->daddr))
		return count(STAT_PASS_LOCAL, f->len, XDP_PASS);
	if (ip6->hop_limit <= 1)
		return count(STAT_PASS_TTL, f->len, XDP_PASS);

	m.h = dc_hash6(ip6->daddr.s6_addr32);
	c = dc_begin(DC_V6, m.h);
	if (fib_backend == FIB_BACKEND_KERNEL) {
		struct bpf_fib_lookup p = {};
		int rc;

		dc_count(DC_V6, DC_BYPASS);
		p.family = AF_INET6;
		p.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
		p.l4_protocol = ip6->nexthdr;
		p.tot_len = f->l3len;
		__builtin_memcpy(p.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(p.ipv6_dst, &ip6->daddr, 16);
		p.ifindex = ctx->ingress_ifindex;
		rc = kernel_failed(bpf_fib_lookup(ctx, &p, sizeof(p), 0), f);
		if (rc)
			return rc - 1;
		nh = kernel_nexthop(&knh, &p);
	} else {
		int hit;

		gid = dc6_cached(c, &m, ip6->daddr.s6_addr32, fib6_answer, 0, &hit);
		if (!gid)
			return count(STAT_PASS_NO_ROUTE, f->len, XDP_PASS);
		if (gid == FIB6_KERNEL)
			return count(STAT_PASS_FIB_FULL, f->len, XDP_PASS);
		return route_to(ctx, gid, f);
	}
	return egress(ctx, nh, f);
}

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct frame f = {.len = data_end - data};
	struct vlan_hdr *vh;
	__u32 l3off = ETH_HLEN;
	__be16 proto;

	__u32 zero = 0;
	__u64 *deadline = bpf_map_lookup_elem(&heartbeat, &zero);
	/* The coarse clock: a tick's precision is plenty for a deadline in seconds, and
	 * it reads the last tick's time instead of the clock source. */
	if (deadline && *deadline && bpf_ktime_get_coarse_ns() > *deadline)
		return count(STAT_PASS_STALE, f.len, XDP_PASS);
#ifdef FIBFLEET_VARIANT
	/* The upgrade test's second program: different instructions, same behaviour (no
	 * queue has this index). */
	if (ctx->rx_queue_index == 0xffffffff)
		return count(STAT_PASS_MALFORMED, f.len, XDP_PASS);
#endif
	if ((void *)(eth + 1) > data_end)
		return count(STAT_PASS_MALFORMED, f.len, XDP_PASS);
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021AD))
		return count(STAT_PASS_VLAN, f.len, XDP_PASS); /* QinQ: the kernel's */
	if (proto == bpf_htons(ETH_P_8021Q)) {
		vh = (void *)(eth + 1);
		if ((void *)(vh + 1) > data_end)
			return count(STAT_PASS_MALFORMED, f.len, XDP_PASS);
		proto = vh->encap_proto;
		if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
			return count(STAT_PASS_VLAN, f.len, XDP_PASS); /* double tagged */
		f.in_tci = bpf_ntohs(vh->tci);
		f.tagged = 1;
		l3off = ETH_HLEN + VLAN_HLEN;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		f.proto = ETH_P_IP;
		return forward4(ctx, data + l3off, data_end, &f);
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		f.proto = ETH_P_IPV6;
		return forward6(ctx, data + l3off, data_end, &f);
	}
	return count(STAT_PASS_NOT_IPV4, f.len, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
