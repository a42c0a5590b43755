/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The IPv4 FIB maps and lookup, shared by xdp_fwd.c and the lookup probe (fib4_probe.c),
 * so tests and benchmarks run the production lookup code. */
#pragma once

/*
 * The IPv4 FIB: DIR-24-8 as DPDK's rte_lpm, compiled by userspace (fib package) and
 * written through mmap with one atomic 32-bit store per entry, so a lookup always sees
 * either the old or the new entry. fib4_tbl24 has one entry per /24 (2^24 entries,
 * stored as 65,536 rows of 256 so the array costs 64 MiB, not 128: array elements
 * are rounded up to 8 bytes). An entry is a nexthop id, 0 (no route), FIB4_KERNEL
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

/* fib4_lookup returns the nexthop id for a destination (network order), 0 for none. */
static __always_inline __u32 fib4_lookup(__be32 daddr)
{
	__u32 a = bpf_ntohl(daddr), row = a >> 16, g;
	struct fib4_row *r = bpf_map_lookup_elem(&fib4_tbl24, &row);
	__u32 e;

	if (!r)
		return 0;
	e = r->e[(a >> 8) & 0xff];
	if (!(e & FIB4_GROUP))
		return e;
	g = e & ~FIB4_GROUP;
	r = bpf_map_lookup_elem(&fib4_tbl8, &g);
	if (!r)
		return 0;
	return r->e[a & 0xff];
}

