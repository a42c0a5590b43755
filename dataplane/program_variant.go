//go:build fibfleet_variant

package dataplane

import "github.com/cilium/ebpf"

// loadProgramSpec loads the variant: the same program with different instructions,
// so that the upgrade test swaps to a program that really differs.
func loadProgramSpec() (*ebpf.CollectionSpec, error) { return loadXdpfwdv() }
