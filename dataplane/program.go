//go:build !fibfleet_variant

package dataplane

import "github.com/cilium/ebpf"

// loadProgramSpec is the forwarding program this build loads.
func loadProgramSpec() (*ebpf.CollectionSpec, error) { return loadXdpfwd() }
