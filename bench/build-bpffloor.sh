#!/usr/bin/env bash
# Builds the native floor (bench/tools/bench_floor.bpf.c, empty uprobe and
# uretprobe programs, and its libbpf loader bench/tools/bench_bpffloor.c)
# into build/bench/.  Run by scripts/bench and bench/bpf-native.sh, after
# make -C user: the loader finds a function's file offset with user/lib's
# ELF lookup (bft_elf.c) and links them with its bft_bpf_link_multi().
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
mkdir -p build/bench
clang -g -O2 -target bpf -Wall -Werror -I"/usr/include/$(gcc -print-multiarch)" \
	-c -o build/bench/bench_floor.bpf.o bench/tools/bench_floor.bpf.c
[[ -s build/user/libbftrace.a ]] || make -s -C user all
read -r -a libs <<<"$(pkg-config --libs libbpf libelf libmnl)"
gcc -std=c11 -D_GNU_SOURCE= -O2 -g -Wall -Wextra -Werror -Iinclude/uapi -Iuser/lib \
	-o build/bench/bench-bpffloor bench/tools/bench_bpffloor.c \
	build/user/libbftrace.a "${libs[@]}"
