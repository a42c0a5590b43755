/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The loop the lookup probes (fib4_probe.c, fib6_probe.c) share: userspace puts the
 * first trace index and the count of a run in probe_params, and run() calls a step
 * for each with bpf_loop. */
#pragma once

struct probe_args {
	__u32 start; /* first trace index of this run */
	__u32 count; /* lookups in this run */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct probe_args);
	__uint(max_entries, 1);
} probe_params SEC(".maps");

struct loop_ctx {
	__u32 start;
	struct xdp_md *xdp;
};

static __always_inline int run(struct xdp_md *ctx, void *step)
{
	__u32 zero = 0;
	struct probe_args *args = bpf_map_lookup_elem(&probe_params, &zero);
	struct loop_ctx c = {.xdp = ctx};

	if (!args)
		return XDP_ABORTED;
	c.start = args->start;
	if (bpf_loop(args->count, step, &c, 0) != args->count)
		return XDP_ABORTED;
	return XDP_PASS;
}
