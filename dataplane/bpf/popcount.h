/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
#pragma once

/* popcount64 counts set bits: BPF has no popcount instruction (12 instructions). */
static __always_inline __u32 popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}
