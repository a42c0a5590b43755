package rpki

import (
	"net/netip"
	"sync"
)

// Union is the VRPs of several validators together (a route is valid if any of them
// says so), kept per validator so that one going away takes only its own; safe for
// concurrent use (routes are validated while validators update it).
type Union struct {
	mu       sync.RWMutex
	table    *Table
	count    map[VRP]int
	bySource map[string]map[VRP]struct{}
	ready    map[string]bool // validators whose full set arrived
}

// NewUnion returns an empty union.
func NewUnion() *Union {
	return &Union{table: NewTable(nil), count: map[VRP]int{}, bySource: map[string]map[VRP]struct{}{}, ready: map[string]bool{}}
}

// Apply takes a validator's update and returns the prefixes of the VRPs that entered
// or left the union: the routes to check again are those they cover.
func (u *Union) Apply(up Update) []netip.Prefix {
	u.mu.Lock()
	defer u.mu.Unlock()
	src := u.bySource[up.Source]
	if src == nil {
		src = map[VRP]struct{}{}
		u.bySource[up.Source] = src
	}
	u.ready[up.Source] = true
	var changed []netip.Prefix
	for _, v := range up.Added {
		if _, had := src[v]; had {
			continue
		}
		src[v] = struct{}{}
		if u.count[v]++; u.count[v] == 1 {
			u.table.Add(v)
			changed = append(changed, v.Prefix)
		}
	}
	for _, v := range up.Removed {
		changed = append(changed, u.drop(src, v)...)
	}
	return changed
}

// Drop forgets a validator's VRPs (it has been away longer than their expiry) and
// returns the prefixes of those that left the union.
func (u *Union) Drop(source string) []netip.Prefix {
	u.mu.Lock()
	defer u.mu.Unlock()
	src := u.bySource[source]
	var changed []netip.Prefix
	for v := range src {
		changed = append(changed, u.drop(src, v)...)
	}
	delete(u.bySource, source)
	delete(u.ready, source)
	return changed
}

func (u *Union) drop(src map[VRP]struct{}, v VRP) []netip.Prefix {
	if _, had := src[v]; !had {
		return nil
	}
	delete(src, v)
	if u.count[v]--; u.count[v] > 0 {
		return nil
	}
	delete(u.count, v)
	u.table.Remove(v)
	return []netip.Prefix{v.Prefix}
}

// Validate is Table.Validate over the union.
func (u *Union) Validate(route netip.Prefix, origin uint32) State {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.table.Validate(route, origin)
}

// Len is the number of distinct VRPs in the union; Sources, per validator, how many
// it holds (validators whose full set has not arrived are left out).
func (u *Union) Len() int {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.table.Len()
}

// Sources reports how many VRPs each validator that delivered its set holds.
func (u *Union) Sources() map[string]int {
	u.mu.RLock()
	defer u.mu.RUnlock()
	out := map[string]int{}
	for s, vs := range u.bySource {
		if u.ready[s] {
			out[s] = len(vs)
		}
	}
	return out
}
