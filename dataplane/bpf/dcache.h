/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The destination cache (issue 5): per-CPU, set-associative, 4 ways, in front of a FIB,
 * one per address family. An IPv4 set is one 64-byte line of four ways {destination,
 * answer, generation, epoch}; an IPv6 set is two lines. A probe costs one set read and
 * a hit skips the FIB. Lookup cost is bounded whatever the traffic: no chains, no GC,
 * no timers.
 *
 * Runtime resize: each family's cache is the one inner map of an array-of-maps
 * (dc4_maps, dc6_maps). Userspace sizes a new inner map and swaps it in with one
 * update; the cache is off while the slot is empty. The set mask in dc_ctl and the
 * inner map change one after the other, so a packet may use a mask that does not fit
 * the map: a set out of range is a miss, and a set found through the other mask still
 * holds only entries checked by their full key, so an answer is never wrong.
 *
 * Invalidation is lazy: an entry carries the fleet epoch it was made in (a flush bumps
 * the epoch, O(1), no map walk) and the generation of its destination's region read
 * before the FIB (fib4.h, fib6.h: bumped by userspace after every route change
 * overlapping the region). A stale entry counts as a miss. Answers are next-hop group
 * ids (or, in front of a reference FIB, its answer), never MACs or members: the group
 * and nexthop tables are read on every hit, so neither a neighbour change nor a
 * failover needs an invalidation.
 *
 * Measurements for the sizing controller (cache/): per family, lookups (counted
 * whether the cache is on or off), hits, misses, stale, inserts, evictions, refusals;
 * a HyperLogLog of the destinations on a hash-sampled sixteenth of packets (the
 * working set, measured with the cache off too; and one of the destinations of hits,
 * whose lookups the cache saved); and ghost hits: misses that a cache
 * with twice the ways would have hit, from the tags of the entries last pushed out of
 * a sample of the sets (set sampling, as utility monitors do).
 */
#pragma once

#define DC_V4 0
#define DC_V6 1

struct dc4_way {
	__u32 key;    /* destination, host order */
	__u32 answer; /* 0: empty */
	__u32 gen;
	__u32 epoch;
};

struct dc4_set {
	struct dc4_way w[4];
};

struct dc6_way {
	__u32 key[4]; /* destination, network order */
	__u32 answer; /* 0: empty */
	__u32 gen;
	__u32 epoch;
	__u32 hash; /* dc_hash6 of the key, for admission and ghosts without rehashing */
};

struct dc6_set {
	struct dc6_way w[4];
};

/* One family's geometry; set by userspace with the inner map. */
struct dc_family {
	__u32 mask;        /* sets per CPU - 1 */
	__u32 shift;       /* log2(sets per CPU): CPU c's sets start at c << shift */
	__u32 ghost_shift; /* sets whose low ghost_shift index bits are 0 keep ghosts */
	__u32 pad;
};

struct dc_config {
	struct dc_family fam[2];
	__u32 epoch;     /* the fleet's flush epoch */
	__u32 age_every; /* accesses between two aging steps of the frequency sketch */
	__u32 flags;     /* DC_NO_ADMISSION: admit every miss (for comparison) */
	__u32 pad;
};

#define DC_NO_ADMISSION 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct dc_config);
	__uint(max_entries, 1);
} dc_ctl SEC(".maps");

/* The inner maps' templates, defined in place and by sizes (clang emits only forward
 * declarations of the types an inner map definition points to). BPF_F_INNER_MAP lets
 * a replacement have another size; the kernel allows it for plain arrays only, so an
 * inner map holds every CPU's sets, CPU c's at c << shift: per-CPU by layout. */
#define DC_TABLE(name, set_t)                                      \
	struct {                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);          \
		__type(key, __u32);                                \
		__uint(max_entries, 1);                            \
		__array(values, struct {                           \
			__uint(type, BPF_MAP_TYPE_ARRAY);          \
			__uint(map_flags, BPF_F_INNER_MAP);        \
			__uint(key_size, sizeof(__u32));           \
			__uint(value_size, sizeof(set_t));         \
			__uint(max_entries, 1);                    \
		});                                                \
	} name SEC(".maps")

DC_TABLE(dc4_maps, struct dc4_set);
DC_TABLE(dc6_maps, struct dc6_set);

/* Per-CPU counters, DC_NSTATS per family. */
enum dc_stat {
	DC_BYPASS = 0, /* packets that reached the FIB step with the cache off (lookups are
	                * bypasses + hits + misses + stale: no count of its own on a hit) */
	DC_HIT,
	DC_MISS,  /* nothing for the destination */
	DC_STALE, /* an entry whose epoch or generation is old: a miss */
	DC_INSERT,
	DC_EVICT,  /* an insert that replaced a live entry */
	DC_REFUSE, /* an entry leaving the window dropped: the main ways were all busier */
	DC_GHOST,  /* a miss in a sampled set that twice the ways would have hit */
	DC_NSTATS,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2 * DC_NSTATS);
} dc_stats SEC(".maps");

static __always_inline void dc_count(__u32 fam, __u32 s)
{
	__u32 k = fam * DC_NSTATS + s;
	__u64 *c = bpf_map_lookup_elem(&dc_stats, &k);

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

static __always_inline __u32 dc_hash6(const __u32 *a)
{
	return dc_hash32(a[0] ^ dc_hash32(a[1] ^ dc_hash32(a[2] ^ dc_hash32(a[3]))));
}

/*
 * The working set: a HyperLogLog of 1,024 one-byte registers per family and CPU,
 * updated for destinations whose hash has its low DC_HLL_SAMPLE bits 0 (a sixteenth of
 * them, always the same ones, so the estimate times 16 counts all). Userspace takes the
 * maximum of each register over CPUs and resets them every interval.
 */
#define DC_HLL_SAMPLE 4
#define DC_HLL_REGS 1024

struct dc_hll {
	__u8 r[DC_HLL_REGS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct dc_hll);
	__uint(max_entries, 4); /* per family: all destinations, then those of hits */
} dc_hll SEC(".maps");

static __always_inline void dc_observe(__u32 fam, __u32 h)
{
	__u32 w, n = 1, i;
	struct dc_hll *s;

	if (h & ((1 << DC_HLL_SAMPLE) - 1))
		return;
	s = bpf_map_lookup_elem(&dc_hll, &fam);
	if (!s)
		return;
	/* Register from the top 10 bits; rank from the 18 between: trailing zeros + 1. */
	w = ((h >> DC_HLL_SAMPLE) & 0x3ffff) | 0x40000;
	if (!(w & 0xffff)) {
		n += 16;
		w >>= 16;
	}
	if (!(w & 0xff)) {
		n += 8;
		w >>= 8;
	}
	if (!(w & 0xf)) {
		n += 4;
		w >>= 4;
	}
	if (!(w & 0x3)) {
		n += 2;
		w >>= 2;
	}
	if (!(w & 0x1))
		n += 1;
	i = (h >> 22) & (DC_HLL_REGS - 1);
	if (s->r[i] < n)
		s->r[i] = n;
}

/*
 * Ghosts: for each sampled set (at most 1,024 of them), the tags (hashes) of the last
 * four entries pushed out of it (evicted or refused), newest first. A miss in a
 * sampled set whose tag is there would have hit with eight ways: twice the cache.
 */
#define DC_GHOST_SETS 1024

struct dc_ghost {
	__u32 tag[DC_GHOST_SETS * 4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct dc_ghost);
	__uint(max_entries, 2);
} dc_ghost SEC(".maps");

/* dc_ghost_base returns where a set's ghosts are, or -1 when it keeps none. */
static __always_inline int dc_ghost_base(const struct dc_config *c, __u32 fam, __u32 idx)
{
	__u32 sh = c->fam[fam & 1].ghost_shift & 31;

	if (idx & ((1U << sh) - 1))
		return -1;
	return ((idx >> sh) & (DC_GHOST_SETS - 1)) * 4;
}

static __always_inline void dc_ghost_put(__u32 fam, int base, __u32 tag)
{
	struct dc_ghost *g;
	__u32 b = base;

	if (base < 0)
		return;
	g = bpf_map_lookup_elem(&dc_ghost, &fam);
	if (!g)
		return;
	b &= DC_GHOST_SETS * 4 - 4;
	g->tag[b + 3] = g->tag[b + 2];
	g->tag[b + 2] = g->tag[b + 1];
	g->tag[b + 1] = g->tag[b];
	g->tag[b] = tag | 1;
}

static __always_inline void dc_ghost_check(__u32 fam, int base, __u32 tag)
{
	struct dc_ghost *g;
	__u32 b = base;
	int i;

	if (base < 0)
		return;
	g = bpf_map_lookup_elem(&dc_ghost, &fam);
	if (!g)
		return;
	b &= DC_GHOST_SETS * 4 - 4;
#pragma unroll
	for (i = 0; i < 4; i++) {
		if (g->tag[b + i] == (tag | 1)) {
			g->tag[b + i] = 0;
			dc_count(fam, DC_GHOST);
			return;
		}
	}
}

/*
 * Admission (W-TinyLFU, Einziger et al.; see dc_victim): a per-CPU count-min sketch of
 * 4 rows of 4,096 8-bit counters and a 32,768-bit doorkeeper estimate how often each
 * destination (by hash, both families) is seen. An access sets the destination's
 * doorkeeper bit, or, when it is set already, bumps its counters. The sketch ages
 * continuously: every age_every accesses one of its words is halved (or, in the
 * doorkeeper, cleared), so the whole of it halves once per 5,120 steps, about every ten
 * cache sizes of traffic.
 */
#define DC_WIDTH 4096
#define DC_SKETCH_WORDS (4 * DC_WIDTH / 4)
#define DC_DOOR_WORDS 1024

struct dc_freq {
	__u32 w[DC_SKETCH_WORDS + DC_DOOR_WORDS];
	__u32 accesses; /* since the last aging step, weights included */
	__u32 cursor;
	__u32 rnd; /* a linear congruential generator's state, for sampling hits */
	__u32 pad;
};

/* Hits are recorded one in DC_HIT_SAMPLE, with that weight: a hit costs a quarter of
 * the sketch's work (the sketch is most of a hit's cost otherwise), and a resident's
 * count grows as fast on average. Misses, which decide admission, are all recorded. */
#define DC_HIT_SAMPLE 4

/* dc_h2 is a destination's second hash for the sketch's rows and the doorkeeper: bits
 * of h other than those the first row's index takes (the finalizer mixed them all). */
static __always_inline __u32 dc_h2(__u32 h)
{
	return (h >> 12 | h << 20) | 1;
}

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

/* dc_estimate is how often a destination (by hash) was seen lately, doorkeeper included. */
static __always_inline __u32 dc_estimate(struct dc_freq *f, __u32 h)
{
	__u32 h2 = dc_h2(h), b, c, est = 255;
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

/* dc_record counts one access to a destination (a hit is sampled, see DC_HIT_SAMPLE)
 * and takes one aging step when due. */
static __always_inline void dc_record(__u32 h, __u32 age_every, int hit)
{
	__u32 h2 = dc_h2(h), b, w, c, zero = 0, weight = 1;
	struct dc_freq *f = bpf_map_lookup_elem(&dc_freq, &zero);
	__u32 *door;
	int row;

	if (!f)
		return;
	if (hit) {
		/* Pseudo-random, not every n-th: traffic cycling over n destinations would
		 * have one of them recorded every time and the others never. */
		f->rnd = f->rnd * 1664525 + 1013904223;
		if (f->rnd >> 30)
			return;
		weight = DC_HIT_SAMPLE;
	}
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
			c = c + weight < 255 ? weight : 255 - c;
			f->w[w] += c << ((b & 3) * 8);
		}
	}
	f->accesses += weight;
	if (f->accesses < age_every)
		return;
	f->accesses = 0;
	w = f->cursor;
	f->cursor = w + 1 < DC_SKETCH_WORDS + DC_DOOR_WORDS ? w + 1 : 0;
	if (w < DC_SKETCH_WORDS)
		f->w[w] = (f->w[w] >> 1) & 0x7f7f7f7f;
	else if (w < DC_SKETCH_WORDS + DC_DOOR_WORDS)
		f->w[w] = 0;
}

/*
 * Verification. The insert (dc4_put, dc6_put) and its choice of a way (dc_victim) are
 * global (non-inline) BPF functions: the verifier checks each once, with unknown
 * arguments, instead of once per path of its callers through the parser and the FIB.
 * With them inline, the IPv6 cache path alone took more than a million processed
 * instructions, and 6.1's verifier lost the bound of a way index spilled to the stack.
 * Their arguments are scalars and pointers to memory of a fixed size (a set, the
 * configuration, a destination copied to the stack: never a packet pointer, which
 * 6.1 refuses), they return a scalar, and an index that comes back from one is
 * masked where it is used. The lookup (dc4_find, dc6_find) stays inline: it runs on
 * every packet, and a call costs a hit about 1.5 ns (docs/BENCHMARKS.md).
 */

/* What a lookup learned, for the insert after a miss. Scalars only (dc*_put, global,
 * takes it). */
struct dc_miss {
	__u32 h;   /* the destination's hash */
	__u32 gen; /* its region's generation, read before the FIB (set by the find) */
	__u32 idx; /* its set's index in the CPU's part of the table */
	__u32 pad;
};

/* dc_live says whether a way (answer, epoch) holds an entry of the current epoch. */
static __always_inline int dc_live(__u32 answer, __u32 e, __u32 epoch)
{
	return answer && e == epoch;
}

/* What dc_victim decides from, and what it decides. */
struct dc_vict {
	__u32 fam;
	__u32 h;     /* the newcomer's hash */
	__s32 own;   /* the way holding the destination (stale), -1: none */
	__u32 live;  /* bit i: way i holds an entry of the current epoch */
	__u32 hash[4]; /* the hashes of the keys in ways 0-3 (only a full set needs them) */
	__s32 move;  /* out: the main way the window's entry moves to, -1: none */
	__u32 gone;  /* out: the hash of the entry pushed out, 0: none */
};

/*
 * dc_victim picks the way an insert writes. A destination's own (stale) entry is
 * rewritten in place. Otherwise (W-TinyLFU) way 0 is the set's window: the newcomer
 * always goes there, so a new flow's next packets hit; the entry it displaces moves
 * to ways 1-3, the main part, if one is empty or from an old epoch, else over the main
 * way seen least often if it is seen at least as often (an eviction), else it is
 * dropped (a refusal). A flood of one-packet destinations churns the window only; an
 * entry of a busy flow in the main part is replaced only by something busier. Returns
 * the way to write (0-3), v->move and v->gone.
 */
__noinline int dc_victim(const struct dc_config *c, struct dc_vict *v)
{
	__u32 zero = 0, est, least = 0xffffffff, live, fam;
	struct dc_freq *f;
	int i, to = -1;

	if (!c || !v)
		return 0;
	live = v->live;
	fam = v->fam & 1;
	v->move = -1;
	v->gone = 0;
	if (v->own >= 0)
		return v->own & 3;
	if (c->flags & DC_NO_ADMISSION) {
		/* For comparison: an empty or old way, else one chosen by the hash. */
#pragma unroll
		for (i = 0; i < 4; i++)
			if (to < 0 && !(live & (1 << i)))
				to = i;
		if (to >= 0)
			return to & 3;
		to = dc_hash32(v->h ^ 0x9e3779b9) >> 30;
		v->gone = v->hash[to & 3];
		dc_count(fam, DC_EVICT);
		return to & 3;
	}
	if (!(live & 1))
		return 0;
#pragma unroll
	for (i = 1; i < 4; i++)
		if (to < 0 && !(live & (1 << i)))
			to = i;
	if (to < 0) {
		f = bpf_map_lookup_elem(&dc_freq, &zero);
		if (f) {
#pragma unroll
			for (i = 1; i < 4; i++) {
				est = dc_estimate(f, v->hash[i]);
				if (est < least) {
					least = est;
					to = i;
				}
			}
			if (dc_estimate(f, v->hash[0]) < least)
				to = -1;
		}
		if (to < 0) {
			v->gone = v->hash[0];
			dc_count(fam, DC_REFUSE);
		} else {
			v->gone = v->hash[to & 3];
			dc_count(fam, DC_EVICT);
		}
	}
	v->move = to;
	return 0;
}

/* dc_set_of returns the set of hash m->h in a family's table (its index in m->idx),
 * or 0 when the cache is off or meets a resize half done: a bypass. */
static __always_inline void *dc_set_of(void *outer, __u32 fam, struct dc_config *c, struct dc_miss *m)
{
	__u32 zero = 0, key;
	void *inner, *s;

	inner = bpf_map_lookup_elem(outer, &zero);
	if (!inner) {
		dc_count(fam, DC_BYPASS);
		return 0;
	}
	m->idx = m->h & c->fam[fam & 1].mask;
	key = bpf_get_smp_processor_id() << (c->fam[fam & 1].shift & 31) | m->idx;
	s = bpf_map_lookup_elem(inner, &key);
	if (!s)
		dc_count(fam, DC_BYPASS);
	return s;
}

/* dc_hit counts a hit and returns its answer. */
static __always_inline __u32 dc_hit(__u32 fam, const struct dc_config *c, struct dc_miss *m, __u32 answer)
{
	dc_record(m->h, c->age_every, 1);
	dc_observe(fam + 2, m->h);
	dc_count(fam, DC_HIT);
	return answer;
}

/* dc_missed counts a miss (stale: an entry of an old epoch or generation was there). */
static __always_inline __u32 dc_missed(__u32 fam, const struct dc_config *c, struct dc_miss *m, int stale)
{
	dc_record(m->h, c->age_every, 0);
	if (stale)
		dc_count(fam, DC_STALE);
	else {
		dc_count(fam, DC_MISS);
		dc_ghost_check(fam, dc_ghost_base(c, fam, m->idx), m->h);
	}
	return 0;
}

/* dc_inserted does what every insert does after dc_victim: the ghost of what left,
 * the count. */
static __always_inline void dc_inserted(__u32 fam, const struct dc_config *c, struct dc_miss *m, struct dc_vict *v)
{
	if (v->gone)
		dc_ghost_put(fam, dc_ghost_base(c, fam, m->idx), v->gone);
	dc_count(fam, DC_INSERT);
}

#ifdef FIB4_H
/* dc4_set returns the IPv4 set of m->h, or 0 (bypass). */
static __always_inline struct dc4_set *dc4_set(struct dc_config *c, struct dc_miss *m)
{
	return dc_set_of(&dc4_maps, DC_V4, c, m);
}

/* dc4_find looks destination a (host order) up in its set s: the cached answer, or 0
 * on a miss, with m filled for dc4_put. The region's generation is read here, before
 * the caller's FIB lookup: userspace bumps it after changing the FIB, so an answer
 * stamped with the new generation is a new answer. */
static __always_inline __u32 dc4_find(const struct dc4_set *s, __u32 a, const struct dc_config *c, struct dc_miss *m)
{
	__u32 stale = 0;
	int i;

	m->gen = fib4_gen(a);
#pragma unroll
	for (i = 0; i < 4; i++) {
		if (s->w[i].key != a || !s->w[i].answer)
			continue;
		if (s->w[i].gen == m->gen && s->w[i].epoch == c->epoch)
			return dc_hit(DC_V4, c, m, s->w[i].answer);
		stale = 1;
	}
	return dc_missed(DC_V4, c, m, stale);
}

/* dc4_put caches the FIB's answer for a in its set s after dc4_find missed. */
__noinline int dc4_put(struct dc4_set *s, __u32 a, __u32 answer, const struct dc_config *c, struct dc_miss *m)
{
	struct dc_vict v = {.fam = DC_V4, .own = -1};
	int i, slot, mv;

	if (!s || !c || !m || !answer)
		return 0;
	v.h = m->h;
#pragma unroll
	for (i = 0; i < 4; i++) {
		if (v.own < 0 && s->w[i].key == a)
			v.own = i;
		if (dc_live(s->w[i].answer, s->w[i].epoch, c->epoch))
			v.live |= 1 << i;
	}
	/* Only a full set needs its keys' hashes (estimates, the ghost of what leaves). */
	if (v.live == 0xf) {
#pragma unroll
		for (i = 0; i < 4; i++)
			v.hash[i] = dc_hash32(s->w[i].key);
	}
	/* The way comes back from a global function: an unknown scalar to the verifier,
	 * bounded here, at its use, with no tie to the paths above. */
	slot = dc_victim(c, &v);
	barrier_var(slot); /* or clang, seeing dc_victim's body, drops the mask below */
	slot &= 3;
	if (v.move > 0) { /* 1-3, masked at its use: a value read back has no bound */
		mv = v.move;
		barrier_var(mv);
		s->w[mv & 3] = s->w[0];
	}
	dc_inserted(DC_V4, c, m, &v);
	s->w[slot].key = a;
	s->w[slot].answer = answer;
	s->w[slot].gen = m->gen;
	s->w[slot].epoch = c->epoch;
	return 0;
}

#endif /* FIB4_H */

#ifdef FIB6_H
/* An IPv6 destination, network order, copied off the packet (global functions take
 * no packet pointers). */
struct dc6_key {
	__u32 w[4];
};

static __always_inline int dc6_same(const __u32 *k, const __u32 *a)
{
	return k[0] == a[0] && k[1] == a[1] && k[2] == a[2] && k[3] == a[3];
}

/* dc6_set returns the IPv6 set of m->h, or 0 (bypass). */
static __always_inline struct dc6_set *dc6_set(struct dc_config *c, struct dc_miss *m)
{
	return dc_set_of(&dc6_maps, DC_V6, c, m);
}

/* dc6_find is dc4_find for an IPv6 destination. */
static __always_inline __u32 dc6_find(const struct dc6_set *s, const struct dc6_key *a, const struct dc_config *c, struct dc_miss *m)
{
	__u32 stale = 0;
	int i;

	m->gen = fib6_gen_of(a->w);
#pragma unroll
	for (i = 0; i < 4; i++) {
		if (s->w[i].hash != m->h || !s->w[i].answer || !dc6_same(s->w[i].key, a->w))
			continue;
		if (s->w[i].gen == m->gen && s->w[i].epoch == c->epoch)
			return dc_hit(DC_V6, c, m, s->w[i].answer);
		stale = 1;
	}
	return dc_missed(DC_V6, c, m, stale);
}

/* dc6_put is dc4_put for an IPv6 destination. */
__noinline int dc6_put(struct dc6_set *s, const struct dc6_key *a, __u32 answer, const struct dc_config *c, struct dc_miss *m)
{
	struct dc_vict v = {.fam = DC_V6, .own = -1};
	int i, slot, mv;

	if (!s || !a || !c || !m || !answer)
		return 0;
	v.h = m->h;
#pragma unroll
	for (i = 0; i < 4; i++) {
		if (v.own < 0 && s->w[i].hash == m->h && dc6_same(s->w[i].key, a->w))
			v.own = i;
		if (dc_live(s->w[i].answer, s->w[i].epoch, c->epoch))
			v.live |= 1 << i;
		v.hash[i] = s->w[i].hash;
	}
	slot = dc_victim(c, &v);
	barrier_var(slot);
	slot &= 3;
	if (v.move > 0) { /* 1-3, masked at its use: a value read back has no bound */
		mv = v.move;
		barrier_var(mv);
		s->w[mv & 3] = s->w[0];
	}
	dc_inserted(DC_V6, c, m, &v);
	__builtin_memcpy(s->w[slot].key, a->w, 16);
	s->w[slot].answer = answer;
	s->w[slot].gen = m->gen;
	s->w[slot].epoch = c->epoch;
	s->w[slot].hash = m->h;
	return 0;
}

#endif /* FIB6_H */

/* dc_begin starts a family's lookup: feeds the working set and returns the cache's
 * configuration (0 when the map is missing: then no cache, and the packet counts as a
 * bypass). */
static __always_inline struct dc_config *dc_begin(__u32 fam, __u32 h)
{
	__u32 zero = 0;
	struct dc_config *c;

	dc_observe(fam, h);
	c = bpf_map_lookup_elem(&dc_ctl, &zero);
	if (!c)
		dc_count(fam, DC_BYPASS);
	return c;
}
