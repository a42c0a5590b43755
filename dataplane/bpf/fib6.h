/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The IPv6 FIB maps and lookup (xdp_fwd.c, fib6_probe.c). Chosen by measurement on the
 * real table (docs/BENCHMARKS.md, "IPv6 FIB"): a trie pays one dependent DRAM miss per
 * level, and a /48 sits five levels down; here every length is one exact match, and
 * the reads of a round are issued before any is compared. */
#pragma once
#define FIB6_H

/*
 * fib6_dir has two u32 per /16 (2^16 of them, as 512 rows of 256 u32): the group id
 * of the longest route up to /16 covering it (0: none; FIB6_KERNEL: some key under the
 * /16 found no room, so its packets pass to the kernel), and which of /24, /32 and /48
 * (bits 0, 1, 2) have keys under it.
 *
 * fib6_table is one hash of every route from /17 to /48 expanded to the next of
 * FIB6_LEVELS (a /44 is 16 /48 keys): buckets of one cache line, five keys
 * (length << 56 | the top length bits), their values, and a 32-bit filter of the keys
 * whose first bucket this is that live in their second (two-choice placement).
 * A value is a next-hop group id (below 2^16) with flags: at /32, bit FIB6_BELOW_SHIFT + i for
 * each longer length FIB6_LEVELS[2 + i] (36, 40, 44, 48) with keys under the /32, so a
 * lookup reads only the lengths that exist below its /32 (a /32 with keys below has a
 * key, with or without a route of its own); at /48, FIB6_DEEPER: fib6_long holds longer routes in this /48.
 * The lookup is at most two rounds of reads issued together: /48, /32 and /24 (a /48
 * match ends it), then the lengths between that its /32 names.
 *
 * Userspace writes through mmap: a value with one atomic 32-bit store, a key with one
 * atomic 64-bit store after its value, a removed key becomes FIB6_TOMB, and its slot is
 * reused only after a grace period, so a lookup sees an old or a new answer, never a
 * mix. A /32's flag for a length is set before the first key of that length below it
 * and cleared after the last.
 */
#define FIB6_LEVELS {24, 32, 36, 40, 44, 48}
#define FIB6_NLEVELS 6
#define FIB6_DEEPER 0x80000000u
#define FIB6_BELOW_SHIFT 24
#define FIB6_ID_MASK 0x00ffffffu
#define FIB6_KERNEL 0x00ffffffu /* a first-level value only */
#define FIB6_MUL1 0x9e3779b97f4a7c15ULL
#define FIB6_MUL2 0xc2b2ae3d27d4eb4fULL
#define FIB6_MUL3 0xff51afd7ed558ccdULL

struct fib6_bucket {
	__u64 key[5];
	__u32 val[5];
	__u32 spilled;
};

struct fib6_row {
	__u32 e[256];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib6_row);
	__uint(max_entries, 512);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib6_dir SEC(".maps");

/* Sized by the loader (fib.buckets_v6): 2^fib6_log2 buckets. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib6_bucket);
	__uint(max_entries, 1 << 19);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib6_table SEC(".maps");

volatile const __u32 fib6_log2 = 19;

struct fib6_lpm_key {
	__u32 prefixlen;
	__u32 addr[4];
};

/* Routes longer than /48: rare in the Internet table (none in the 2026 one), so a BPF
 * LPM trie, read only under a /48 key marked FIB6_DEEPER. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct fib6_lpm_key);
	__type(value, __u32);
	__uint(max_entries, 65536);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib6_long SEC(".maps");

/*
 * Route identity for the dst cache: a generation per region of the address space,
 * the /32s hashed into 65,536 regions (multiplicative hash of the top 32 bits, the top
 * 16 bits of the product), bumped by userspace after every route change overlapping
 * the region (a route shorter than /32 bumps every region of its /32s, all of them
 * from /16 up). A /16 would put most of the IPv6 Internet in a handful of regions.
 */
#define FIB6_GEN_MUL 0x9e3779b1u

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fib6_row);
	__uint(max_entries, 256);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fib6_gen SEC(".maps");

/* fib6_gen_of is the generation of a destination's (network order) region. */
static __always_inline __u32 fib6_gen_of(const __u32 *daddr)
{
	__u32 g = (bpf_ntohl(daddr[0]) * FIB6_GEN_MUL) >> 16, row = g >> 8;
	struct fib6_row *r = bpf_map_lookup_elem(&fib6_gen, &row);

	return r ? r->e[g & 0xff] : 0;
}

static __always_inline __u32 fib6_index(__u64 key, __u64 mul)
{
	return (key * mul) >> (64 - fib6_log2);
}

static __always_inline __u32 fib6_spillbit(__u64 key)
{
	return 1U << ((key * FIB6_MUL3) >> 59);
}

static __always_inline int fib6_match(struct fib6_bucket *b, __u64 key, __u32 *v)
{
	int s;

#pragma unroll
	for (s = 0; s < 5; s++)
		if (b->key[s] == key) {
			*v = b->val[s];
			return 1;
		}
	return 0;
}

/* fib6_probe reads the buckets of the lengths in mask (bit k: FIB6_LEVELS[k]), all
 * issued before any is compared, and returns the value of the longest that matches
 * (0: none). With routes_only, a key without a route of its own does not count (once
 * the long-route trie, if its key says so, has had its say): the next length does. */
static __always_inline __u32 fib6_probe(__u64 h, __u32 mask, const __u32 *daddr, int routes_only)
{
	const __u32 levels[FIB6_NLEVELS] = FIB6_LEVELS;
	struct fib6_bucket *b[FIB6_NLEVELS];
	__u64 key[FIB6_NLEVELS];
	__u32 idx, v;
	int k;

#pragma unroll
	for (k = 0; k < FIB6_NLEVELS; k++) {
		b[k] = 0;
		key[k] = (__u64)levels[k] << 56 | h >> (64 - levels[k]);
		if (!(mask & (1U << k)))
			continue;
		idx = fib6_index(key[k], FIB6_MUL1);
		b[k] = bpf_map_lookup_elem(&fib6_table, &idx);
	}
#pragma unroll
	for (k = FIB6_NLEVELS - 1; k >= 0; k--) {
		struct fib6_bucket *alt;

		if (!b[k])
			continue;
		if (!fib6_match(b[k], key[k], &v)) {
			if (!(b[k]->spilled & fib6_spillbit(key[k])))
				continue;
			idx = fib6_index(key[k], FIB6_MUL2);
			alt = bpf_map_lookup_elem(&fib6_table, &idx);
			if (!alt || !fib6_match(alt, key[k], &v))
				continue;
		}
		if (!routes_only)
			return v;
		if (v & FIB6_DEEPER) {
			struct fib6_lpm_key lk = {.prefixlen = 128};
			__u32 *lv;

			__builtin_memcpy(lk.addr, daddr, 16);
			lv = bpf_map_lookup_elem(&fib6_long, &lk);
			if (lv)
				return *lv;
		}
		if (v & FIB6_ID_MASK)
			return v & FIB6_ID_MASK;
	}
	return 0;
}

/* fib6_lookup returns the next-hop group id for a destination (four network-order words),
 * 0 for no route, FIB6_KERNEL when the kernel must decide. */
static __always_inline __u32 fib6_lookup(const __u32 *daddr)
{
	__u64 h = (__u64)bpf_ntohl(daddr[0]) << 32 | bpf_ntohl(daddr[1]);
	__u32 di = h >> 48, row = di >> 7, v0, mask, v24, v32, v, below;
	struct fib6_row *d = bpf_map_lookup_elem(&fib6_dir, &row);

	if (!d)
		return 0;
	v0 = d->e[(di & 127) * 2];
	mask = d->e[(di & 127) * 2 + 1];
	if (v0 == FIB6_KERNEL)
		return FIB6_KERNEL;
	/* Round one: /48 (the longest, and the most common route) and /32 (and /24,
	 * rare), read together. */
	v = mask & 4 ? fib6_probe(h, 1 << (FIB6_NLEVELS - 1), daddr, 1) : 0;
	v32 = mask & 2 ? fib6_probe(h, 2, daddr, 0) : 0;
	v24 = mask & 1 ? fib6_probe(h, 1, daddr, 0) : 0;
	if (v)
		return v;
	below = (v32 >> FIB6_BELOW_SHIFT) & 0x7; /* /36, /40, /44: /48 is read already */
	if (below) {
		/* Round two: the lengths between that exist under this /32. */
		v = fib6_probe(h, below << 2, daddr, 1);
		if (v)
			return v;
	}
	if (v32 & FIB6_ID_MASK)
		return v32 & FIB6_ID_MASK;
	if (v24)
		return v24;
	return v0;
}
