/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The destination cache (issue 5): per-CPU, set-associative, 4 ways, in front of a FIB.
 * An IPv4 set is one 64-byte line of four ways {destination, answer, generation,
 * epoch}, so a probe costs one line read and a hit skips the FIB. Lookup cost is bounded
 * whatever the traffic: no chains, no GC, no timers.
 *
 * Invalidation is lazy: an entry carries the fleet epoch it was made in (a flush bumps
 * the epoch, O(1), no map walk) and the generation of its destination's /16 in
 * fib4_gen16 (bumped by userspace on every route change overlapping the /16, and by a
 * new more-specific there too), read from that small, hot table on a hit. A stale
 * entry counts as a miss. Answers are nexthop ids (or, in front of a reference FIB,
 * its answer), never MACs: a neighbour change needs no invalidation.
 */
#pragma once

struct dc4_way {
	__u32 key;    /* destination, host order */
	__u32 answer; /* 0: empty */
	__u32 gen;
	__u32 epoch;
};

struct dc4_set {
	struct dc4_way w[4];
};

/* The cache's geometry and the fleet epoch; set by userspace. */
struct dc_config {
	__u32 mask4; /* sets - 1 (a power of two minus one); the cache is off when sets == 0 */
	__u32 sets4;
	__u32 epoch;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct dc_config);
	__uint(max_entries, 1);
} dc_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct dc4_set);
	__uint(max_entries, 4096);
} dcache4 SEC(".maps");

/* Per-CPU counters. */
enum dc_stat {
	DC_HIT = 0,
	DC_MISS,  /* nothing for the destination */
	DC_STALE, /* an entry whose epoch or generation is old: a miss */
	DC_INSERT,
	DC_EVICT, /* an insert that replaced a live entry */
	DC_NSTATS,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, DC_NSTATS);
} dc_stats SEC(".maps");

static __always_inline void dc_count(__u32 s)
{
	__u64 *c = bpf_map_lookup_elem(&dc_stats, &s);

	if (c)
		(*c)++;
}

/* MurmurHash3's finalizer: every input bit moves every output bit, so a /24's
 * addresses spread over all sets (a multiplicative hash would put them in one). */
static __always_inline __u32 dc_hash32(__u32 x)
{
	x ^= x >> 16;
	x *= 0x85ebca6b;
	x ^= x >> 13;
	x *= 0xc2b2ae35;
	x ^= x >> 16;
	return x;
}

static __always_inline __u32 dc4_gen(__u32 a)
{
	__u32 row = a >> 24;
	struct fib4_row *r = bpf_map_lookup_elem(&fib4_gen16, &row);

	return r ? r->e[(a >> 16) & 0xff] : 0;
}

/* dc4_lookup returns the cached answer for destination a (host order), 0 on a miss;
 * *set is then where an insert goes (0: the cache is off). */
static __always_inline __u32 dc4_lookup(__u32 a, struct dc_config *ctl, __u32 gen, struct dc4_set **set)
{
	__u32 idx = dc_hash32(a) & ctl->mask4, stale = 0;
	struct dc4_set *s;
	int i;

	*set = 0;
	if (!ctl->sets4)
		return 0;
	s = bpf_map_lookup_elem(&dcache4, &idx);
	if (!s)
		return 0;
	*set = s;
#pragma unroll
	for (i = 0; i < 4; i++) {
		if (s->w[i].key != a || !s->w[i].answer)
			continue;
		if (s->w[i].gen == gen && s->w[i].epoch == ctl->epoch) {
			dc_count(DC_HIT);
			return s->w[i].answer;
		}
		stale = 1;
	}
	dc_count(stale ? DC_STALE : DC_MISS);
	return 0;
}

/* dc4_insert puts an answer in the set: over the destination's own (stale) entry, else
 * an empty way or one from an old epoch, else (an eviction) a way chosen by the
 * hash's top bits. */
static __always_inline void dc4_insert(struct dc4_set *s, __u32 a, __u32 answer, __u32 gen, __u32 epoch)
{
	int i, slot = -1;

#pragma unroll
	for (i = 0; i < 4; i++)
		if (slot < 0 && (s->w[i].key == a || !s->w[i].answer || s->w[i].epoch != epoch))
			slot = i;
	if (slot < 0) {
		slot = dc_hash32(a ^ 0x9e3779b9) >> 30;
		dc_count(DC_EVICT);
	}
	dc_count(DC_INSERT);
	slot &= 3;
	s->w[slot].key = a;
	s->w[slot].answer = answer;
	s->w[slot].gen = gen;
	s->w[slot].epoch = epoch;
}
