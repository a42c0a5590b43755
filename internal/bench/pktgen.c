//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Traffic for the forwarding benchmark (pktgen is not available here).
 *
 * pktgen runs under BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES and XDP_TXes a
 * 64-byte UDP frame per run to the next destination of a trace; pktgen6 the same over
 * IPv6. Live-frame pages are reused, so every header is written for every packet.
 * xdp_sink sits on the far end: it counts IPv4 and IPv6 frames and drops them (and
 * its presence lets the veth accept redirected frames); everything else (ARP) goes to
 * the kernel. (IPv6 neighbour discovery is not needed: the router's neighbours are
 * permanent.)
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"

struct pktgen_cfg {
	__u8 dmac[ETH_ALEN];
	__u8 smac[ETH_ALEN];
	__be32 saddr;
	__u32 mask; /* trace length - 1 (a power of two) */
	__u32 pos;
	struct in6_addr saddr6;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct pktgen_cfg);
	__uint(max_entries, 1);
} pktgen_config SEC(".maps");

struct dst_row {
	__be32 e[256];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dst_row);
	__uint(max_entries, 4096);
} pktgen_dsts SEC(".maps");

/* IPv6 destinations, 64 to a row; the loader sizes the map to the trace. */
struct dst_row6 {
	struct in6_addr e[64];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dst_row6);
	__uint(max_entries, 1);
} pktgen_dsts6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} sink_count SEC(".maps");

struct udphdr {
	__be16 source;
	__be16 dest;
	__be16 len;
	__u16 check;
};

/* next_frame writes a frame's Ethernet header and takes the trace's next position. */
static __always_inline struct pktgen_cfg *next_frame(struct ethhdr *eth, __u16 proto, __u32 *idx)
{
	__u32 zero = 0;
	struct pktgen_cfg *cfg = bpf_map_lookup_elem(&pktgen_config, &zero);

	if (!cfg)
		return 0;
	*idx = cfg->pos++ & cfg->mask;
	__builtin_memcpy(eth->h_dest, cfg->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, cfg->smac, ETH_ALEN);
	eth->h_proto = bpf_htons(proto);
	return cfg;
}

SEC("xdp")
int pktgen(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	struct pktgen_cfg *cfg;
	struct dst_row *row;
	__u32 idx, r, sum = 0;
	__u16 *w;
	int i;

	if ((void *)(udp + 1) > data_end)
		return XDP_ABORTED;
	cfg = next_frame(eth, ETH_P_IP, &idx);
	if (!cfg)
		return XDP_ABORTED;
	r = idx >> 8;
	row = bpf_map_lookup_elem(&pktgen_dsts, &r);
	if (!row)
		return XDP_ABORTED;
	iph->version = 4;
	iph->ihl = 5;
	iph->tos = 0;
	iph->tot_len = bpf_htons(64 - ETH_HLEN);
	iph->id = 0;
	iph->frag_off = 0;
	iph->ttl = 64;
	iph->protocol = 17;
	iph->check = 0;
	iph->saddr = cfg->saddr;
	iph->daddr = row->e[idx & 0xff];
	w = (void *)iph;
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	iph->check = ~sum;
	udp->source = bpf_htons(4000);
	udp->dest = bpf_htons(9);
	udp->len = bpf_htons(64 - ETH_HLEN - 20);
	udp->check = 0;
	return XDP_TX;
}

SEC("xdp")
int pktgen6(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip6 + 1);
	struct pktgen_cfg *cfg;
	struct dst_row6 *row;
	__u32 idx, r;

	if ((void *)(udp + 1) > data_end)
		return XDP_ABORTED;
	cfg = next_frame(eth, ETH_P_IPV6, &idx);
	if (!cfg)
		return XDP_ABORTED;
	r = idx >> 6;
	row = bpf_map_lookup_elem(&pktgen_dsts6, &r);
	if (!row)
		return XDP_ABORTED;
	ip6->version = 6;
	ip6->priority = 0;
	ip6->flow_lbl[0] = 0;
	ip6->flow_lbl[1] = 0;
	ip6->flow_lbl[2] = 0;
	ip6->payload_len = bpf_htons(64 - ETH_HLEN - sizeof(*ip6));
	ip6->nexthdr = 17;
	ip6->hop_limit = 64;
	ip6->saddr = cfg->saddr6;
	ip6->daddr = row->e[idx & 63];
	udp->source = bpf_htons(4000);
	udp->dest = bpf_htons(9);
	udp->len = bpf_htons(64 - ETH_HLEN - sizeof(*ip6));
	udp->check = 0xffff; /* not checked on the way: no router verifies it */
	return XDP_TX;
}

SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = (void *)(long)ctx->data;
	__u32 zero = 0;
	__u64 *n;

	if ((void *)(eth + 1) > data_end || (eth->h_proto != bpf_htons(ETH_P_IP) && eth->h_proto != bpf_htons(ETH_P_IPV6)))
		return XDP_PASS;
	n = bpf_map_lookup_elem(&sink_count, &zero);
	if (n)
		(*n)++;
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual BSD/GPL";
