package dcache

import "testing"

func TestCheckEntries(t *testing.T) {
	for _, n := range []int{0, MinEntries, 1 << 12, MaxEntries} {
		if err := CheckEntries(n); err != nil {
			t.Errorf("CheckEntries(%d) = %v, want valid", n, err)
		}
	}
	for _, n := range []int{-4, 1, 2, 3, 6, 100, MaxEntries * 2} {
		if err := CheckEntries(n); err == nil {
			t.Errorf("CheckEntries(%d) accepted it", n)
		}
	}
}

func TestStatsSub(t *testing.T) {
	a := Stats{Lookups: 10, Hits: 7, Misses: 2, Stale: 1, Inserts: 3, Evictions: 2, Refused: 1, GhostHits: 4}
	b := Stats{Lookups: 25, Hits: 17, Misses: 5, Stale: 3, Inserts: 8, Evictions: 4, Refused: 5, GhostHits: 6}
	want := Stats{Lookups: 15, Hits: 10, Misses: 3, Stale: 2, Inserts: 5, Evictions: 2, Refused: 4, GhostHits: 2}
	if got := b.Sub(a); got != want {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
}
