//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fibfleet's XDP forwarding program (IPv4).
 *
 * Steps, in order: parse Ethernet and IPv4 with bounds checks, hand anything that is
 * not plainly forwardable to the kernel (each case with its own counter), look the
 * destination up in the FIB, follow the nexthop id to the nexthop entry, check the
 * egress MTU and port, then decrement TTL, rewrite MACs and redirect.
 *
 * Every return goes through count(): a fallback that nobody can see is a bug.
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

/* Stat indices: one per action and pass reason. Keep in sync with dataplane/stats.go. */
enum stat_reason {
	STAT_FORWARDED = 0,     /* XDP_REDIRECT to the nexthop's egress port */
	STAT_PASS_NOT_IPV4,     /* ARP, IPv6, anything else: the kernel's business */
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
	STAT_MAX,
};

struct stat_rec {
	__u64 packets;
	__u64 bytes;
};

/* Nexthop flags. */
#define NH_F_VALID 0x1
#define NH_F_RESOLVED 0x2

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

#include "fib4.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct nexthop);
	__uint(max_entries, MAX_NEXTHOPS);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} nexthops SEC(".maps");

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
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stat_rec);
	__uint(max_entries, STAT_MAX);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} stats SEC(".maps");

/* Which FIB the program forwards from; set by the loader (fib.backend). */
#define FIB_BACKEND_COMPILED 0
#define FIB_BACKEND_KERNEL 1
volatile const __u32 fib_backend = FIB_BACKEND_COMPILED;

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

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u64 len = data_end - data;
	struct ethhdr *eth = data;
	struct vlan_hdr *vh;
	struct iphdr *iph;
	struct nexthop *nh, knh;
	__u32 nhid, l3off = ETH_HLEN;
	__u16 tot_len, in_tci = 0, out_vid;
	__be16 proto;
	__be32 daddr;
	int tagged = 0;

	if ((void *)(eth + 1) > data_end)
		return count(STAT_PASS_MALFORMED, len, XDP_PASS);
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021AD))
		return count(STAT_PASS_VLAN, len, XDP_PASS); /* QinQ: the kernel's */
	if (proto == bpf_htons(ETH_P_8021Q)) {
		vh = (void *)(eth + 1);
		if ((void *)(vh + 1) > data_end)
			return count(STAT_PASS_MALFORMED, len, XDP_PASS);
		proto = vh->encap_proto;
		if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD))
			return count(STAT_PASS_VLAN, len, XDP_PASS); /* double tagged */
		in_tci = bpf_ntohs(vh->tci);
		tagged = 1;
		l3off = ETH_HLEN + VLAN_HLEN;
	}
	if (proto != bpf_htons(ETH_P_IP))
		return count(STAT_PASS_NOT_IPV4, len, XDP_PASS);

	iph = data + l3off;
	if ((void *)(iph + 1) > data_end)
		return count(STAT_PASS_MALFORMED, len, XDP_PASS);
	if (iph->version != 4 || iph->ihl < 5)
		return count(STAT_PASS_MALFORMED, len, XDP_PASS);
	if (iph->ihl != 5)
		return count(STAT_PASS_IP_OPTIONS, len, XDP_PASS);
	tot_len = bpf_ntohs(iph->tot_len);
	if (tot_len < sizeof(*iph) || tot_len > len - l3off)
		return count(STAT_PASS_MALFORMED, len, XDP_PASS);

	/* Local and multicast first: eBGP sessions arrive with TTL 1 and are not expiring. */
	daddr = iph->daddr;
	if ((daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000) || daddr == 0xffffffff)
		return count(STAT_PASS_MULTICAST, len, XDP_PASS);
	if (bpf_map_lookup_elem(&local_v4, &daddr))
		return count(STAT_PASS_LOCAL, len, XDP_PASS);
	if (iph->ttl <= 1)
		return count(STAT_PASS_TTL, len, XDP_PASS);

	if (fib_backend == FIB_BACKEND_KERNEL) {
		/* The in-product baseline: the kernel's FIB through bpf_fib_lookup(), as
		 * xdp-forward does. Routes must be in the kernel (fib.kernel_sync). */
		struct bpf_fib_lookup p = {};
		long rc;

		p.family = AF_INET;
		p.tos = iph->tos;
		p.l4_protocol = iph->protocol;
		p.tot_len = tot_len;
		p.ipv4_src = iph->saddr;
		p.ipv4_dst = daddr;
		p.ifindex = ctx->ingress_ifindex;
		rc = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
		if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
			return count(STAT_PASS_UNRESOLVED, len, XDP_PASS);
		if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
			return count(STAT_PASS_MTU, len, XDP_PASS);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS) /* no route, blackhole, not forwarded, forwarding off */
			return count(STAT_PASS_NO_ROUTE, len, XDP_PASS);
		knh.ifindex = p.ifindex;
		__builtin_memcpy(knh.smac, p.smac, ETH_ALEN);
		__builtin_memcpy(knh.dmac, p.dmac, ETH_ALEN);
		knh.mtu = 0xffff; /* checked by the helper */
		knh.flags = NH_F_VALID | NH_F_RESOLVED;
		knh.vlan = 0;
		knh.pad = 0;
		nh = &knh;
	} else {
		nhid = fib4_lookup(daddr);
		if (!nhid)
			return count(STAT_PASS_NO_ROUTE, len, XDP_PASS);
		if (nhid == FIB4_KERNEL)
			return count(STAT_PASS_FIB_FULL, len, XDP_PASS);
		nh = bpf_map_lookup_elem(&nexthops, &nhid);
		if (!nh || (nh->flags & (NH_F_VALID | NH_F_RESOLVED)) != (NH_F_VALID | NH_F_RESOLVED))
			return count(STAT_PASS_UNRESOLVED, len, XDP_PASS);
	}
	if (tot_len > nh->mtu)
		return count(STAT_PASS_MTU, len, XDP_PASS);
	/* Check the port before touching the frame: a pass after the rewrite would hand
	 * the kernel a frame with our MACs and a decremented TTL. */
	if (!bpf_map_lookup_elem(&tx_ports, &nh->ifindex))
		return count(STAT_PASS_NO_TXPORT, len, XDP_PASS);

	/* A nexthop on a VLAN sub-interface egresses on its parent with the tag in the
	 * frame (XDP cannot redirect into a VLAN device): push, pop or rewrite it. */
	out_vid = nh->vlan & VLAN_VID_MASK;
	if (tagged != (out_vid != 0)) {
		if (bpf_xdp_adjust_head(ctx, tagged ? VLAN_HLEN : -VLAN_HLEN))
			return count(STAT_PASS_VLAN, len, XDP_PASS); /* no headroom: frame untouched */
		data_end = (void *)(long)ctx->data_end;
		data = (void *)(long)ctx->data;
	}
	eth = data;
	iph = data + (out_vid ? ETH_HLEN + VLAN_HLEN : ETH_HLEN);
	if ((void *)(iph + 1) > data_end)
		return count(STAT_DROP_INTERNAL, len, XDP_DROP); /* cannot happen: keeps the verifier sure */
	if (out_vid) {
		vh = (void *)(eth + 1);
		eth->h_proto = bpf_htons(ETH_P_8021Q);
		/* Keep the priority bits of an incoming tag; a pushed tag has priority 0. */
		vh->tci = bpf_htons((in_tci & ~VLAN_VID_MASK) | out_vid);
		vh->encap_proto = bpf_htons(ETH_P_IP);
	} else {
		eth->h_proto = bpf_htons(ETH_P_IP);
	}
	ip_decrease_ttl(iph);
	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
	return count(STAT_FORWARDED, len, bpf_redirect_map(&tx_ports, nh->ifindex, 0));
}

char _license[] SEC("license") = "Dual BSD/GPL";
