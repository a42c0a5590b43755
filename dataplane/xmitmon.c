//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Frames redirected to an egress that its driver did not take.
 *
 * The forwarding program counts a frame as forwarded when bpf_redirect_map accepts
 * it. The kernel then hands the frames to the egress driver in bulk, after the
 * program returned (the devmap's flush); a driver that cannot take them (a veth whose
 * peer has neither an XDP program nor GRO, a NIC whose XDP transmit ring is full or
 * absent) makes the kernel free them. The drivers count some of these losses in their
 * own ethtool statistics, not all: veth counts none when its peer is not ready. The
 * one place that sees every such loss, for every driver, is the xdp_devmap_xmit
 * tracepoint the flush fires (once per bulk of up to 16 frames), and, since Linux
 * 6.3, the xdp_redirect_err tracepoint: the devmap then refuses such a target when
 * the program returns. These programs sum both per egress ifindex.
 */
#include "abi.h"
#include "bpf_helpers.h"

/* Only the fields read; CO-RE relocates their offsets against the running kernel's
 * BTF. */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} possible_net_t;

struct net_device {
	int ifindex;
	possible_net_t nd_net;
} __attribute__((preserve_access_index));

/* The node's network namespace (its inode number), set at load: the tracepoints
 * fire for every namespace, and ifindexes are per namespace; another node's (a lab,
 * a test fleet on one machine) must not be counted as this one's. */
volatile const __u32 netns_ino;

static __always_inline int ours(const struct net_device *dev)
{
	return dev->nd_net.net->ns.inum == netns_ino;
}

struct xmit_rec {
	__u64 sent;
	__u64 dropped;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, __u32); /* egress ifindex */
	__type(value, struct xmit_rec);
	__uint(max_entries, 1024);
} xmit_stats SEC(".maps");

static __always_inline struct xmit_rec *rec(__u32 ifindex)
{
	struct xmit_rec *r = bpf_map_lookup_elem(&xmit_stats, &ifindex);

	if (!r) {
		struct xmit_rec z = {};

		bpf_map_update_elem(&xmit_stats, &ifindex, &z, BPF_NOEXIST);
		r = bpf_map_lookup_elem(&xmit_stats, &ifindex);
	}
	return r;
}

/* The devmap's flush: TP_PROTO(const struct net_device *from_dev, const struct
 * net_device *to_dev, int sent, int drops, int err), the same since Linux 5.8. The
 * frames a driver's ndo_xdp_xmit did not take (6.1's veth with a peer not ready).
 */
SEC("tp_btf/xdp_devmap_xmit")
int xdp_devmap_xmit(__u64 *ctx)
{
	const struct net_device *to = (const struct net_device *)ctx[1];
	int sent = (int)ctx[2], drops = (int)ctx[3];
	struct xmit_rec *r;

	if (!ours(to))
		return 0;
	r = rec(to->ifindex);
	if (!r)
		return 0;
	if (sent > 0)
		r->sent += sent;
	if (drops > 0)
		r->dropped += drops;
	return 0;
}

/* A redirect the kernel refused when the program returned: TP_PROTO(const struct
 * net_device *dev, const struct bpf_prog *xdp, const void *tgt, int err, enum
 * bpf_map_type map_type, u32 map_id, u32 index). Since 6.3 the devmap refuses here a
 * target whose xdp-features lack ndo-xmit (a veth whose peer has neither XDP nor
 * GRO), instead of at the flush. For a devmap, index is the program's key: the
 * forwarding program keys tx_ports by egress ifindex. */
SEC("tp_btf/xdp_redirect_err")
int xdp_redirect_err(__u64 *ctx)
{
	const struct net_device *dev = (const struct net_device *)ctx[0];
	__u32 map_type = (__u32)ctx[4], index = (__u32)ctx[6];
	struct xmit_rec *r;

	if (map_type != BPF_MAP_TYPE_DEVMAP && map_type != BPF_MAP_TYPE_DEVMAP_HASH)
		return 0;
	if (!ours(dev)) /* the ingress: the program and its devmap are in its namespace */
		return 0;
	r = rec(index);
	if (r)
		r->dropped++;
	return 0;
}

char _license[] SEC("license") = "Dual BSD/GPL";
