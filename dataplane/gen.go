package dataplane

// The generated objects are committed so `go build` needs no clang; rerun this after
// editing xdp_fwd.c or bpf/*.h (needs Debian clang-19).
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror" -target bpfel -type nexthop -type nh_group -type stat_rec -type dc_config xdpfwd xdp_fwd.c -- -I./bpf -I./bpf/headers
// xdpfwdv is the same program with different instructions (FIBFLEET_VARIANT), built
// into the node only with -tags fibfleet_variant: the upgrade test's second version.
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror -DFIBFLEET_VARIANT" -target bpfel -tags fibfleet_variant xdpfwdv xdp_fwd.c -- -I./bpf -I./bpf/headers
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror" -target bpfel -type probe_args -type lpm_key_v4 fib4probe fib4_probe.c -- -I./bpf -I./bpf/headers
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror" -target bpfel -type probe_args -type lpm_key_v6 fib6probe fib6_probe.c -- -I./bpf -I./bpf/headers
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror" -target bpfel -type xmit_rec xmitmon xmitmon.c -- -I./bpf -I./bpf/headers
