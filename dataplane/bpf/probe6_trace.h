/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The trace and the answers of the IPv6 probes (fib6_probe.c, and the study
 * candidates of internal/bench, v6cand.c): mmapable arrays userspace fills and reads,
 * destinations 64 per row (4 u32 each, network order), answers 256 per row. The
 * loader sizes them (max_entries) to the trace. */
#pragma once

struct row {
	__u32 e[256];
};

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

/* slot returns trace entry i of this run (probe_loop.h) and, in *res, where its
 * answer goes; 0 past the arrays. */
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
