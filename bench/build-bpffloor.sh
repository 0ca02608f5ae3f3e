#!/usr/bin/env bash
# Builds the native floor (bench/tools/bench_floor.bpf.c, empty uprobe and
# uretprobe programs, and its libbpf loader bench/tools/bench_bpffloor.c)
# into build/bench/.  Run by scripts/bench and bench/bpf-native.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$root"
mkdir -p build/bench
clang -g -O2 -target bpf -Wall -Werror -I"/usr/include/$(gcc -print-multiarch)" \
	-c -o build/bench/bench_floor.bpf.o bench/tools/bench_floor.bpf.c
read -r -a libs <<<"$(pkg-config --libs libbpf)"
gcc -std=c11 -D_GNU_SOURCE= -O2 -g -Wall -Wextra -Werror \
	-o build/bench/bench-bpffloor bench/tools/bench_bpffloor.c "${libs[@]}"
