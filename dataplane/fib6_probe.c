//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The IPv6 lookup probe (issue 4: choose the IPv6 FIB structure by measurement): runs
 * a lookup mechanism over a trace of IPv6 destinations with bpf_loop inside one
 * BPF_PROG_TEST_RUN, writing each answer to a result array, as fib4_probe.c does for
 * IPv4. Candidates (built by internal/bench, v6cand.go), over the top 64 bits:
 *   - stride: a 2^16-entry first level, then 1 KiB nodes of 256 u32 per 8 bits;
 *   - compressed: the same trie Poptrie-style, 128-byte nodes of child and leaf
 *     bitmaps (popcount) with consecutive children and leaves;
 * and the references: a BPF LPM trie and bpf_fib_lookup(AF_INET6). The production
 * lookup (fib6.h, the hash chosen) runs on a Dataplane's own maps.
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "probe_loop.h"
#include "popcount.h"
#include "fib6.h"
#include "dcache.h"

#define V6_NODE 0x40000000u

/* The candidates' strides: the first level's bits, then each node level's (0 after
 * the last; they sum to 64). Set by the loader. */
const volatile __u32 strides[8] = {16, 8, 8, 8, 8, 8, 8};

struct row {
	__u32 e[256];
};

struct line {
	__u32 e[16];
};

/* Destinations, 64 per row (4 u32 each, network order), and answers, 256 per row. */
#define ARRAY(name, value_t, n)                    \
	struct {                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);  \
		__uint(map_flags, BPF_F_MMAPABLE); \
		__type(key, __u32);                \
		__type(value, value_t);            \
		__uint(max_entries, n);            \
	} name SEC(".maps")

ARRAY(probe6_trace, struct row, 1);
ARRAY(probe6_result, struct row, 1);
ARRAY(s6_dir, struct row, 256);
ARRAY(s6_nodes, struct row, 1);
ARRAY(c6_dir, struct row, 256);
ARRAY(c6_nodes, struct line, 1);
ARRAY(c6_leaves, struct row, 1);

struct lpm_key_v6 {
	__u32 prefixlen;
	__u32 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_key_v6);
	__type(value, __u32);
	__uint(max_entries, 1 << 20);
} probe6_lpm SEC(".maps");

static __always_inline __u32 *slot(struct loop_ctx *c, __u32 i, __u32 **res)
{
	__u32 idx = c->start + i, trow = idx >> 6, rrow = idx >> 8;
	struct row *t = bpf_map_lookup_elem(&probe6_trace, &trow);
	struct row *r = bpf_map_lookup_elem(&probe6_result, &rrow);

	if (!t || !r)
		return 0;
	*res = &r->e[idx & 0xff];
	return &t->e[(idx & 63) * 4];
}

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

/* The loop alone: reads the trace entry, writes its first word: the floor every other
 * mechanism's figure includes. */
static long step_null(__u32 i, void *data)
{
	__u32 *res, *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = a[0];
	return 0;
}

static long step_lpm(__u32 i, void *data)
{
	struct lpm_key_v6 key = {.prefixlen = 128};
	__u32 *res, *a = slot(data, i, &res), *v;

	if (!a)
		return 1;
	__builtin_memcpy(key.addr, a, 16);
	v = bpf_map_lookup_elem(&probe6_lpm, &key);
	*res = v ? *v : 0;
	return 0;
}

static long step_kernel(__u32 i, void *data)
{
	struct loop_ctx *c = data;
	struct bpf_fib_lookup p = {};
	__u32 *res, *a = slot(c, i, &res);
	long rc;

	if (!a)
		return 1;
	p.family = AF_INET6;
	__builtin_memcpy(p.ipv6_dst, a, 16);
	p.ifindex = c->xdp->ingress_ifindex;
	rc = bpf_fib_lookup(c->xdp, &p, sizeof(p), BPF_FIB_LOOKUP_SKIP_NEIGH);
	*res = rc == BPF_FIB_LKUP_RET_SUCCESS ? p.ifindex : 0;
	return 0;
}

SEC("xdp")
int probe6_stride(struct xdp_md *ctx) { return run(ctx, step_stride); }

SEC("xdp")
int probe6_compressed(struct xdp_md *ctx) { return run(ctx, step_compressed); }

static long step_fib6(__u32 i, void *data)
{
	__u32 *res, *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = fib6_lookup(a);
	return 0;
}

SEC("xdp")
int probe6_fib(struct xdp_md *ctx) { return run(ctx, step_fib6); }

/* The production FIB, the LPM trie and bpf_fib_lookup behind the destination cache,
 * with xdp_fwd.c forward6's steps. */
#define PROBE_HIT 0x80000000u
#define MECH_FIB6 0
#define MECH_LPM 1
#define MECH_KERNEL 2

static __always_inline long step_cached(__u32 i, void *data, int mech)
{
	struct lpm_key_v6 key = {.prefixlen = 128};
	struct loop_ctx *lc = data;
	__u32 *res, *a = slot(lc, i, &res), ans, *v;
	struct dc_miss m = {};
	struct dc_config *c;
	struct dc6_set *s;
	struct dc6_key k;

	if (!a)
		return 1;
	__builtin_memcpy(k.w, a, 16);
	m.h = dc_hash6(k.w);
	c = dc_begin(DC_V6, m.h);
	s = c ? dc6_set(c, &m) : 0;
	ans = s ? dc6_find(s, &k, c, &m) : 0;
	if (ans) {
		*res = ans | PROBE_HIT;
		return 0;
	}
	if (mech == MECH_FIB6) {
		ans = fib6_lookup(a);
	} else if (mech == MECH_LPM) {
		__builtin_memcpy(key.addr, a, 16);
		v = bpf_map_lookup_elem(&probe6_lpm, &key);
		ans = v ? *v : 0;
	} else {
		struct bpf_fib_lookup p = {};

		p.family = AF_INET6;
		__builtin_memcpy(p.ipv6_dst, a, 16);
		p.ifindex = lc->xdp->ingress_ifindex;
		ans = bpf_fib_lookup(lc->xdp, &p, sizeof(p), BPF_FIB_LOOKUP_SKIP_NEIGH) == BPF_FIB_LKUP_RET_SUCCESS ? p.ifindex : 0;
	}
	if (s && ans != FIB6_KERNEL)
		dc6_put(s, &k, ans, c, &m);
	*res = ans;
	return 0;
}

static long step_fib6_cached(__u32 i, void *data) { return step_cached(i, data, MECH_FIB6); }
static long step_lpm6_cached(__u32 i, void *data) { return step_cached(i, data, MECH_LPM); }
static long step_kernel6_cached(__u32 i, void *data) { return step_cached(i, data, MECH_KERNEL); }

SEC("xdp")
int probe6_fib_cached(struct xdp_md *ctx) { return run(ctx, step_fib6_cached); }

SEC("xdp")
int probe6_lpm_cached(struct xdp_md *ctx) { return run(ctx, step_lpm6_cached); }

SEC("xdp")
int probe6_kernel_cached(struct xdp_md *ctx) { return run(ctx, step_kernel6_cached); }

SEC("xdp")
int probe6_null(struct xdp_md *ctx) { return run(ctx, step_null); }

SEC("xdp")
int probe6_lpm_trie(struct xdp_md *ctx) { return run(ctx, step_lpm); }

SEC("xdp")
int probe6_kernel_fib(struct xdp_md *ctx) { return run(ctx, step_kernel); }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
