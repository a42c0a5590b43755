#!/usr/bin/env bash
# Vendors libbpf's BPF-side headers so `go generate` needs only clang, not libbpf-dev.
# Source: Debian package libbpf-dev (records its version below). License: LGPL-2.1 OR BSD-2-Clause.
set -euo pipefail
cd "$(dirname "$0")"
src=/usr/include/bpf
[ -f "$src/bpf_helpers.h" ] || { echo "install libbpf-dev first (apt-get install libbpf-dev)" >&2; exit 1; }
for f in bpf_helpers.h bpf_helper_defs.h bpf_endian.h; do cp "$src/$f" "$f"; done
dpkg-query -W -f='libbpf-dev ${Version}\n' libbpf-dev > VERSION
