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
	__u32 age_every; /* accesses between two aging steps of the frequency sketch */
	__u32 flags;     /* DC_NO_ADMISSION: admit every miss (for comparison) */
};

#define DC_NO_ADMISSION 1

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
	DC_EVICT,  /* an insert that replaced a live entry */
	DC_REFUSE, /* an entry leaving the window dropped: the main ways were all busier */
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

/*
 * Admission (W-TinyLFU, Einziger et al.; see dc4_insert): a per-CPU count-min sketch of 4 rows of 4,096
 * 8-bit counters and a 32,768-bit doorkeeper estimate how often each destination is
 * seen. An access sets the destination's doorkeeper bit, or, when it is set already,
 * bumps its counters. The sketch ages continuously: every age_every accesses one of its
 * words is halved (or, in the doorkeeper, cleared), so the whole of it halves once per
 * 5,120 steps, about every ten cache sizes of traffic.
 */
#define DC_WIDTH 4096
#define DC_SKETCH_WORDS (4 * DC_WIDTH / 4)
#define DC_DOOR_WORDS 1024

struct dc_freq {
	__u32 w[DC_SKETCH_WORDS + DC_DOOR_WORDS];
	__u32 accesses;
	__u32 cursor;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct dc_freq);
	__uint(max_entries, 1);
} dc_freq SEC(".maps");

static __always_inline __u32 dc_counter_byte(__u32 h, __u32 h2, int row)
{
	return row * DC_WIDTH + ((h + row * h2) & (DC_WIDTH - 1));
}

/* dc_estimate is how often a destination was seen lately (doorkeeper included). */
static __always_inline __u32 dc_estimate(struct dc_freq *f, __u32 a)
{
	__u32 h = dc_hash32(a), h2 = dc_hash32(a ^ 0x5bd1e995) | 1, b, c, est = 255;
	int row;

#pragma unroll
	for (row = 0; row < 4; row++) {
		b = dc_counter_byte(h, h2, row);
		c = (f->w[(b >> 2) & (DC_SKETCH_WORDS - 1)] >> ((b & 3) * 8)) & 0xff;
		if (c < est)
			est = c;
	}
	b = h2 & (DC_DOOR_WORDS * 32 - 1);
	return est + ((f->w[DC_SKETCH_WORDS + (b >> 5)] >> (b & 31)) & 1);
}

/* dc_record counts one access to a destination and takes one aging step when due. */
static __always_inline void dc_record(struct dc_freq *f, __u32 a, __u32 age_every)
{
	__u32 h = dc_hash32(a), h2 = dc_hash32(a ^ 0x5bd1e995) | 1, b, w, c;
	__u32 *door;
	int row;

	b = h2 & (DC_DOOR_WORDS * 32 - 1);
	door = &f->w[DC_SKETCH_WORDS + (b >> 5)];
	if (!(*door & (1U << (b & 31)))) {
		*door |= 1U << (b & 31);
	} else {
#pragma unroll
		for (row = 0; row < 4; row++) {
			b = dc_counter_byte(h, h2, row);
			w = (b >> 2) & (DC_SKETCH_WORDS - 1);
			c = (f->w[w] >> ((b & 3) * 8)) & 0xff;
			if (c < 255)
				f->w[w] += 1U << ((b & 3) * 8);
		}
	}
	if (++f->accesses < age_every)
		return;
	f->accesses = 0;
	w = f->cursor;
	f->cursor = w + 1 < DC_SKETCH_WORDS + DC_DOOR_WORDS ? w + 1 : 0;
	if (w < DC_SKETCH_WORDS)
		f->w[w] = (f->w[w] >> 1) & 0x7f7f7f7f;
	else if (w < DC_SKETCH_WORDS + DC_DOOR_WORDS)
		f->w[w] = 0;
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
	__u32 idx = dc_hash32(a) & ctl->mask4, stale = 0, zero = 0;
	struct dc_freq *f;
	struct dc4_set *s;
	int i;

	*set = 0;
	if (!ctl->sets4)
		return 0;
	f = bpf_map_lookup_elem(&dc_freq, &zero);
	if (f)
		dc_record(f, a, ctl->age_every);
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

/* dc_live says whether a way holds an entry of the current epoch. */
static __always_inline int dc_live(struct dc4_way *w, __u32 epoch)
{
	return w->answer && w->epoch == epoch;
}

/* dc4_insert puts an answer in the set. A destination's own (stale) entry is rewritten
 * in place. Otherwise (W-TinyLFU, Einziger et al.) way 0 is the set's window: the
 * newcomer always goes there, so a new flow's next packets hit; the entry it displaces
 * moves to ways 1-3, the main part, if one is empty or from an old epoch, else over the
 * main way seen least often if it is seen at least as often (an eviction), else it is
 * dropped (a refusal). A flood of one-packet destinations churns the window only; an
 * entry of a busy flow in the main part is replaced only by something busier. */
static __always_inline void dc4_insert(struct dc4_set *s, __u32 a, __u32 answer, __u32 gen, __u32 epoch, __u32 flags)
{
	__u32 zero = 0, est, least = 0xffffffff;
	struct dc_freq *f;
	int i, slot = -1;

#pragma unroll
	for (i = 0; i < 4; i++)
		if (slot < 0 && s->w[i].key == a)
			slot = i;
	if (slot < 0 && flags & DC_NO_ADMISSION) {
		/* For comparison: an empty or old way, else one chosen by the hash. */
#pragma unroll
		for (i = 0; i < 4; i++)
			if (slot < 0 && !dc_live(&s->w[i], epoch))
				slot = i;
		if (slot < 0) {
			slot = dc_hash32(a ^ 0x9e3779b9) >> 30;
			dc_count(DC_EVICT);
		}
	}
	if (slot < 0) {
		slot = 0;
		if (dc_live(&s->w[0], epoch)) {
			int to = -1;

#pragma unroll
			for (i = 1; i < 4; i++)
				if (to < 0 && !dc_live(&s->w[i], epoch))
					to = i;
			if (to < 0) {
				f = bpf_map_lookup_elem(&dc_freq, &zero);
				if (f) {
#pragma unroll
					for (i = 1; i < 4; i++) {
						est = dc_estimate(f, s->w[i].key);
						if (est < least) {
							least = est;
							to = i;
						}
					}
					if (dc_estimate(f, s->w[0].key) < least)
						to = -1;
				}
				dc_count(to < 0 ? DC_REFUSE : DC_EVICT);
			}
			if (to > 0 && to < 4)
				s->w[to] = s->w[0];
		}
	}
	dc_count(DC_INSERT);
	slot &= 3;
	s->w[slot].key = a;
	s->w[slot].answer = answer;
	s->w[slot].gen = gen;
	s->w[slot].epoch = epoch;
}
