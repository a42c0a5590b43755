//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The IPv6 FIB candidates (issue 4: choose the IPv6 FIB structure by measurement),
 * study code that no node runs. Each runs over a trace of IPv6 destinations with
 * bpf_loop inside one BPF_PROG_TEST_RUN (the dataplane's probe_loop.h), as the
 * production probe does, so that their figures compare with its. Built by v6cand.go,
 * over the top 64 bits:
 *   - stride: a 2^16-entry first level, then 1 KiB nodes of 256 u32 per 8 bits;
 *   - compressed: the same trie Poptrie-style, 128-byte nodes of child and leaf
 *     bitmaps (popcount) with consecutive children and leaves.
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "probe_loop.h"
#include "probe6_trace.h"
#include "popcount.h"

#define V6_NODE 0x40000000u

/* The candidates' strides: the first level's bits, then each node level's (0 after
 * the last; they sum to 64). Set by the loader. */
const volatile __u32 strides[8] = {16, 8, 8, 8, 8, 8, 8};

struct line {
	__u32 e[16];
};

ARRAY(s6_dir, struct row, 256);
ARRAY(s6_nodes, struct row, 1);
ARRAY(c6_dir, struct row, 256);
ARRAY(c6_nodes, struct line, 1);
ARRAY(c6_leaves, struct row, 1);

static __always_inline __u64 hi64(__u32 *a)
{
	return (__u64)bpf_ntohl(a[0]) << 32 | bpf_ntohl(a[1]);
}

static __always_inline __u32 dir_entry(void *dir, __u64 h)
{
	__u32 i = h >> (64 - strides[0]), k = i >> 8;
	struct row *r = bpf_map_lookup_elem(dir, &k);

	return r ? r->e[i & 0xff] : 0;
}

static long step_stride(__u32 i, void *data)
{
	__u32 *res, *a = slot(data, i, &res), e, n, k, end = strides[0], st;
	struct row *r;
	__u64 h;

	if (!a)
		return 1;
	h = hi64(a);
	e = dir_entry(&s6_dir, h);
	for (k = 1; k < 8 && (e & V6_NODE); k++) {
		st = strides[k];
		end += st;
		if (!st || end > 64)
			return 1;
		n = (e & ~V6_NODE) * 256 + ((h >> (64 - end)) & ((1U << st) - 1));
		i = n >> 8;
		r = bpf_map_lookup_elem(&s6_nodes, &i);
		if (!r)
			return 1;
		e = r->e[n & 0xff];
	}
	*res = e;
	return 0;
}

static long step_compressed(__u32 i, void *data)
{
	__u32 *res, *a = slot(data, i, &res), e, k, j, g, key, o, li, end = strides[0], st;
	struct line *l;
	struct row *r;
	__u64 h, mask, cvec, lvec;

	if (!a)
		return 1;
	h = hi64(a);
	e = dir_entry(&c6_dir, h);
	for (k = 1; k < 7 && (e & V6_NODE); k++) {
		st = strides[k];
		end += st;
		if (!st || end > 64)
			return 1;
		j = (h >> (64 - end)) & ((1U << st) - 1);
		g = (e & ~V6_NODE) + (j >> 6); /* the 32-byte group of j's word */
		key = g >> 1;
		l = bpf_map_lookup_elem(&c6_nodes, &key);
		if (!l)
			return 1;
		o = (g & 1) * 8;
		mask = (2ULL << (j & 63)) - 1;
		cvec = (__u64)l->e[o + 1] << 32 | l->e[o];
		if (cvec & (1ULL << (j & 63))) {
			/* Children are consecutive, each (1 << next stride) / 64 groups. */
			e = V6_NODE | (l->e[o + 4] + (popcount64(cvec & mask) - 1) * ((1U << strides[k + 1]) >> 6));
			continue;
		}
		lvec = (__u64)l->e[o + 3] << 32 | l->e[o + 2];
		li = l->e[o + 5] + popcount64(lvec & mask) - 1;
		key = li >> 8;
		r = bpf_map_lookup_elem(&c6_leaves, &key);
		if (!r)
			return 1;
		e = r->e[li & 0xff];
	}
	*res = e;
	return 0;
}

SEC("xdp")
int cand6_stride(struct xdp_md *ctx) { return run(ctx, step_stride); }

SEC("xdp")
int cand6_compressed(struct xdp_md *ctx) { return run(ctx, step_compressed); }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
