// Package dataplane loads fibfleet's XDP forwarding program, attaches it to
// interfaces and gives typed access to its maps.
//
// Lifecycle: Load creates the maps and the program and pins the maps under
// <bpffs>/fibfleet/<node-name>/ (one file per map, named as in the C source), so
// bpftool can inspect a running node and a later version can take the maps over
// across a restart. Links are not pinned yet: when the daemon exits, the program is
// detached and the node falls back to the kernel's forwarding. Until restarts are
// hitless, Load removes pins left by a previous run instead of reusing them, because
// nothing would tell which of their entries are still true.
//
// The package knows nothing of BGP or etcd: callers write routes, nexthops and local
// addresses; the program forwards what it can and counts, per CPU, every frame it
// hands to the kernel, by reason.
package dataplane
