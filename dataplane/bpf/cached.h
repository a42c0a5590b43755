/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * "The cache, else the FIB, then fill": the one lookup the forwarding program
 * (xdp_fwd.c) and every probe behind the cache (fib4_probe.c, fib6_probe.c) run, so
 * that what the probes measure for the cache's calibration is production's code.
 *
 * The caller has hashed the destination and begun the family's cache (dc_begin: c is
 * 0 with the cache off, and m holds the hash); lookup is the FIB (or a probe's
 * reference) and arg its context. Inlined with a constant lookup, the call is direct.
 * An answer of FIBx_KERNEL (the FIB could not hold the route: pass to the kernel) is
 * never cached.
 *
 * As dcache.h, it gives each family's lookup when that family's FIB (fib4.h, fib6.h)
 * was included before it: a program carries only the maps it uses.
 */
#pragma once

#include "dcache.h"

#ifdef FIB4_H

/* dc4_cached answers daddr (network order): the cache's fresh entry (*hit set) or
 * lookup's answer, cached. fib4_answer is the production FIB in lookup's shape. */
static __always_inline __u32 dc4_cached(struct dc_config *c, struct dc_miss *m, __be32 daddr,
					__u32 (*lookup)(__be32 daddr, void *arg), void *arg, int *hit)
{
	__u32 a = bpf_ntohl(daddr), ans;
	struct dc4_set *s = c ? dc4_set(c, m) : 0;

	ans = s ? dc4_find(s, a, c, m) : 0;
	*hit = ans != 0;
	if (ans)
		return ans;
	ans = lookup(daddr, arg);
	if (s && ans != FIB4_KERNEL)
		dc4_put(s, a, ans, c, m);
	return ans;
}

static __always_inline __u32 fib4_answer(__be32 daddr, void *arg) { return fib4_lookup(daddr); }
#endif /* FIB4_H */

#ifdef FIB6_H
/* dc6_cached answers daddr (four words, network order) as dc4_cached does. */
static __always_inline __u32 dc6_cached(struct dc_config *c, struct dc_miss *m, const __u32 *daddr,
					__u32 (*lookup)(const __u32 *daddr, void *arg), void *arg, int *hit)
{
	struct dc6_set *s = c ? dc6_set(c, m) : 0;
	struct dc6_key k;
	__u32 ans;

	__builtin_memcpy(k.w, daddr, 16);
	ans = s ? dc6_find(s, &k, c, m) : 0;
	*hit = ans != 0;
	if (ans)
		return ans;
	ans = lookup(k.w, arg);
	if (s && ans != FIB6_KERNEL)
		dc6_put(s, &k, ans, c, m);
	return ans;
}

static __always_inline __u32 fib6_answer(const __u32 *daddr, void *arg) { return fib6_lookup(daddr); }
#endif /* FIB6_H */
