/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The IPv4 FIB maps and lookup, shared by xdp_fwd.c and the lookup probe (fib4_probe.c),
 * so tests and benchmarks run the production lookup code. */
#pragma once
#define FIB4_H

#include "popcount.h"

/*
 * The IPv4 FIB: DIR-24-8 as DPDK's rte_lpm, compiled by userspace (fib package) and
 * written through mmap with one atomic 32-bit store per entry, so a lookup always sees
 * either the old or the new entry. fib4_tbl24 has one entry per /24 (2^24 entries,
 * stored as 65,536 rows of 256 so the array costs 64 MiB, not 128: array elements
 * are rounded up to 8 bytes). An entry is a next-hop group id, 0 (no route), FIB4_KERNEL
 * (routes of this /24 could not be compiled: pass to the kernel), or FIB4_GROUP | g:
 * the /24 holds longer prefixes and fib4_tbl8 row g has one entry per address.
 */
#define FIB4_GROUP 0x80000000u
#define FIB4_KERNEL 0x00ffffffu

struct fib4_row {
	__u32 e[256];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_row);
	__uint(max_entries, 65536);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib4_tbl24 SEC(".maps");

/* Second-level groups; the loader sizes the pool from config (fib.groups_v4). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_row);
	__uint(max_entries, 16384);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib4_tbl8 SEC(".maps");

/*
 * Route identity for the dst cache: a generation per /16 region (65,536 u32 = 256 KiB,
 * as 256 rows of 256), bumped by userspace whenever a route overlapping the region
 * changes. A cached entry stamped with its region's generation is checked with a read
 * from this small, hot table instead of one per route.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_row);
	__uint(max_entries, 256);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib4_gen16 SEC(".maps");

/* fib4_gen is the generation of a destination's (host order) /16. */
static __always_inline __u32 fib4_gen(__u32 a)
{
	__u32 row = a >> 24;
	struct fib4_row *r = bpf_map_lookup_elem(&fib4_gen16, &row);

	return r ? r->e[(a >> 16) & 0xff] : 0;
}

/*
 * What lookups read first: tbl24 compressed with Poptrie's ideas (direct pointing and
 * leaf bitmaps counted with popcount; Asai and Ohara, SIGCOMM 2015), so the tables a
 * lookup touches stay in the CPU caches (about 4 MiB for the full Internet table, the
 * first level 256 KiB) instead of costing a DRAM miss and a page walk in 64 MiB.
 *
 * fib4_dir has one entry per /16 (2^16 entries). An entry without FIB4_NODE is the
 * tbl24 value of all 256 /24s of its /16. FIB4_NODE | n points at the node starting
 * at line n of fib4_nodes (a line is 64 bytes, 16 u32):
 *   u32 0-7   leafvec: 256 bits, bit i set where /24 number i of the /16 differs from
 *             /24 number i-1 (bit 0 always);
 *   u32 8     byte j = set bits in leafvec words before word j (j = 0..3);
 *   u32 9...  the leaves, one tbl24 value per run of equal /24s, on consecutive lines.
 * /24 number i has leaf (set bits of leafvec up to i) - 1, at u32 8 + that count.
 * FIB4_TBL24 sends the lookup to tbl24 itself (the node pool was full). Userspace
 * builds a new node, then switches the dir entry with one atomic store, and reuses the
 * old node's lines only after a grace period.
 */
#define FIB4_NODE 0x40000000u
#define FIB4_TBL24 0x7fffffffu

struct fib4_line {
	__u32 e[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_row);
	__uint(max_entries, 256);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib4_dir SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib4_line);
	__uint(max_entries, 1 << 18);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib4_nodes SEC(".maps");

/* fib4_tbl24_entry is the tbl24 value of a destination (host order), via fib4_dir. */
static __always_inline __u32 fib4_tbl24_entry(__u32 a)
{
	__u32 k = a >> 24, i = (a >> 8) & 0xff, w = i >> 6, n, c;
	struct fib4_row *r = bpf_map_lookup_elem(&fib4_dir, &k);
	struct fib4_line *l;
	__u64 vec;
	__u32 e;

	if (!r)
		return 0;
	e = r->e[(a >> 16) & 0xff];
	if (!(e & FIB4_NODE))
		return e;
	if (e == FIB4_TBL24) {
		k = a >> 16;
		r = bpf_map_lookup_elem(&fib4_tbl24, &k);
		return r ? r->e[i] : 0;
	}
	n = e & ~FIB4_NODE;
	l = bpf_map_lookup_elem(&fib4_nodes, &n);
	if (!l)
		return 0;
	vec = (__u64)l->e[2 * w + 1] << 32 | l->e[2 * w];
	c = 8 + ((l->e[8] >> (8 * w)) & 0xff) + popcount64(vec & ((2ULL << (i & 63)) - 1));
	n += c >> 4;
	l = bpf_map_lookup_elem(&fib4_nodes, &n);
	return l ? l->e[c & 15] : 0;
}

/* fib4_lookup returns the next-hop group id for a destination (network order), 0 for none. */
static __always_inline __u32 fib4_lookup(__be32 daddr)
{
	__u32 a = bpf_ntohl(daddr), e = fib4_tbl24_entry(a), g;
	struct fib4_row *r;

	if (!(e & FIB4_GROUP))
		return e;
	g = e & ~FIB4_GROUP;
	r = bpf_map_lookup_elem(&fib4_tbl8, &g);
	if (!r)
		return 0;
	return r->e[a & 0xff];
}
