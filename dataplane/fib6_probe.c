//go:build ignore
// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The IPv6 lookup probe: runs a lookup mechanism over a trace of IPv6 destinations
 * with bpf_loop inside one BPF_PROG_TEST_RUN, writing each answer to a result array,
 * as fib4_probe.c does for IPv4: the production lookup (fib6.h) on a Dataplane's own
 * maps, alone or behind the destination cache (the node's calibration), and the
 * references, a BPF LPM trie and bpf_fib_lookup(AF_INET6). The trie candidates the
 * production lookup was chosen against live in internal/bench (v6cand.c).
 */
#include "abi.h"
#include "bpf_helpers.h"
#include "bpf_endian.h"
#include "probe_loop.h"
#include "probe6_trace.h"
#include "fib6.h"
#include "cached.h"

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

static __always_inline __u32 lpm6_answer(const __u32 *a, void *arg)
{
	struct lpm_key_v6 key = {.prefixlen = 128};
	__u32 *v;

	__builtin_memcpy(key.addr, a, 16);
	v = bpf_map_lookup_elem(&probe6_lpm, &key);
	return v ? *v : 0;
}

static __always_inline __u32 kernel6_answer(const __u32 *a, void *arg)
{
	struct loop_ctx *lc = arg;
	struct bpf_fib_lookup p = {};

	p.family = AF_INET6;
	__builtin_memcpy(p.ipv6_dst, a, 16);
	p.ifindex = lc->xdp->ingress_ifindex;
	return bpf_fib_lookup(lc->xdp, &p, sizeof(p), BPF_FIB_LOOKUP_SKIP_NEIGH) == BPF_FIB_LKUP_RET_SUCCESS ? p.ifindex : 0;
}

static long step_lpm(__u32 i, void *data)
{
	__u32 *res, *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = lpm6_answer(a, 0);
	return 0;
}

static long step_kernel(__u32 i, void *data)
{
	__u32 *res, *a = slot(data, i, &res);

	if (!a)
		return 1;
	*res = kernel6_answer(a, data);
	return 0;
}

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
	__u32 *res, *a = slot(data, i, &res), ans;
	struct dc_miss m = {};
	struct dc_config *c;
	int hit;

	if (!a)
		return 1;
	m.h = dc_hash6(a);
	c = dc_begin(DC_V6, m.h);
	if (mech == MECH_FIB6)
		ans = dc6_cached(c, &m, a, fib6_answer, 0, &hit);
	else if (mech == MECH_LPM)
		ans = dc6_cached(c, &m, a, lpm6_answer, 0, &hit);
	else
		ans = dc6_cached(c, &m, a, kernel6_answer, data, &hit);
	*res = hit ? ans | PROBE_HIT : ans;
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
