//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The lookup probe: runs a lookup mechanism over a trace of destinations with bpf_loop
 * inside one BPF_PROG_TEST_RUN and writes each answer to a result array. Tests use it
 * to compare the production lookup (fib4.h, the same code xdp_fwd.c runs) with a
 * reference at millions of addresses; benchmarks use it to time per-lookup cost of
 * fibfleet's FIB, the kernel's FIB (bpf_fib_lookup) and a BPF LPM trie the same way,
 * loop overhead included; and each of them behind the destination cache (dcache.h).
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "probe_loop.h"
#include "fib4.h"
#include "cached.h"

/* Destinations (network order) and answers, 256 per row; sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_row);
	__uint(max_entries, 4096);
} probe_trace SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_row);
	__uint(max_entries, 4096);
} probe_result SEC(".maps");

struct lpm_key_v4 {
	__u32 prefixlen;
	__be32 addr;
};

/* The BPF LPM trie baseline (prefix -> nexthop id), filled by the benchmark. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_key_v4);
	__type(value, __u32);
	__uint(max_entries, 1 << 21);
} probe_lpm SEC(".maps");

static __always_inline __be32 *slot(struct loop_ctx *c, __u32 i, __u32 **res)
{
	__u32 idx = c->start + i, row = idx >> 8;
	struct fib4_row *t, *r;

	/* Each pointer checked right after its lookup, so clang cannot compute an address
	 * from one before its check (the verifier refuses that). */
	t = bpf_map_lookup_elem(&probe_trace, &row);
	if (!t)
		return 0;
	r = bpf_map_lookup_elem(&probe_result, &row);
	if (!r)
		return 0;
	*res = &r->e[idx & 0xff];
	return &t->e[idx & 0xff];
}

static long step_fib4(__u32 i, void *data)
{
	__u32 *res;
	__be32 *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = fib4_lookup(*a);
	return 0;
}

/* DIR-24-8 without the compressed first level (tbl24 read directly), for comparison. */
static long step_tbl24(__u32 i, void *data)
{
	__u32 *res, a4, k, e;
	__be32 *a = slot(data, i, &res);
	struct fib4_row *r;

	if (!a)
		return 1;
	a4 = bpf_ntohl(*a);
	k = a4 >> 16;
	r = bpf_map_lookup_elem(&fib4_tbl24, &k);
	e = r ? r->e[(a4 >> 8) & 0xff] : 0;
	if (e & FIB4_GROUP) {
		k = e & ~FIB4_GROUP;
		r = bpf_map_lookup_elem(&fib4_tbl8, &k);
		e = r ? r->e[a4 & 0xff] : 0;
	}
	*res = e;
	return 0;
}

static __always_inline __u32 lpm_answer(__be32 a, void *arg)
{
	struct lpm_key_v4 key = {.prefixlen = 32, .addr = a};
	__u32 *nh = bpf_map_lookup_elem(&probe_lpm, &key);

	return nh ? *nh : 0;
}

static __always_inline __u32 kernel_answer(__be32 a, void *arg)
{
	struct loop_ctx *c = arg;
	struct bpf_fib_lookup p = {};
	long rc;

	p.family = AF_INET;
	p.ipv4_dst = a;
	p.ifindex = c->xdp->ingress_ifindex;
	/* Route lookup only, as fib4_lookup: neighbours are resolved elsewhere in both. */
	rc = bpf_fib_lookup(c->xdp, &p, sizeof(p), BPF_FIB_LOOKUP_SKIP_NEIGH);
	return rc == BPF_FIB_LKUP_RET_SUCCESS ? p.ifindex : 0;
}

static long step_lpm(__u32 i, void *data)
{
	__u32 *res;
	__be32 *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = lpm_answer(*a, 0);
	return 0;
}

static long step_kernel(__u32 i, void *data)
{
	__u32 *res;
	__be32 *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = kernel_answer(*a, data);
	return 0;
}

/* The same three behind the destination cache: a fresh entry answers, otherwise the
 * FIB does and its answer is cached. */
/* Set in a cached mechanism's answer when the cache answered. */
#define PROBE_HIT 0x80000000u

#define MECH_FIB4 0
#define MECH_LPM 1
#define MECH_KERNEL 2

static __always_inline long step_cached(__u32 i, void *data, int mech)
{
	__u32 *res, ans;
	__be32 *a = slot(data, i, &res);
	struct dc_miss m = {};
	struct dc_config *c;
	int hit;

	if (!a)
		return 1;
	/* The production path's steps (xdp_fwd.c forward4). */
	m.h = dc_hash32(bpf_ntohl(*a));
	c = dc_begin(DC_V4, m.h);
	if (mech == MECH_FIB4)
		ans = dc4_cached(c, &m, *a, fib4_answer, 0, &hit);
	else if (mech == MECH_LPM)
		ans = dc4_cached(c, &m, *a, lpm_answer, 0, &hit);
	else
		ans = dc4_cached(c, &m, *a, kernel_answer, data, &hit);
	*res = hit ? ans | PROBE_HIT : ans; /* for the benchmarks' per-packet hit rates */
	return 0;
}

static long step_fib4_cached(__u32 i, void *data) { return step_cached(i, data, MECH_FIB4); }
static long step_lpm_cached(__u32 i, void *data) { return step_cached(i, data, MECH_LPM); }
static long step_kernel_cached(__u32 i, void *data) { return step_cached(i, data, MECH_KERNEL); }

SEC("xdp")
int probe_fib4(struct xdp_md *ctx) { return run(ctx, step_fib4); }

SEC("xdp")
int probe_tbl24(struct xdp_md *ctx) { return run(ctx, step_tbl24); }

SEC("xdp")
int probe_lpm_trie(struct xdp_md *ctx) { return run(ctx, step_lpm); }

SEC("xdp")
int probe_kernel_fib(struct xdp_md *ctx) { return run(ctx, step_kernel); }

SEC("xdp")
int probe_fib4_cached(struct xdp_md *ctx) { return run(ctx, step_fib4_cached); }

SEC("xdp")
int probe_lpm_cached(struct xdp_md *ctx) { return run(ctx, step_lpm_cached); }

SEC("xdp")
int probe_kernel_cached(struct xdp_md *ctx) { return run(ctx, step_kernel_cached); }

char _license[] SEC("license") = "Dual BSD/GPL";
