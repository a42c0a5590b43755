package bench

// The study programs no node runs (the IPv6 trie candidates and the traffic
// generator) are built here, on the dataplane's headers; their generated objects are
// committed so `go build` needs no clang (rerun with Debian clang-19 after editing).
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror" -target bpfel v6cand v6cand.c -- -I../../dataplane/bpf -I../../dataplane/bpf/headers
//go:generate go tool bpf2go -cc clang-19 -cflags "-O2 -g -Wall -Werror" -target bpfel -type pktgen_cfg pktgen pktgen.c -- -I../../dataplane/bpf -I../../dataplane/bpf/headers
