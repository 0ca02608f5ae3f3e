# SPDX-License-Identifier: GPL-2.0
#
# bfi_rec_stack.awk: the recorder's deepest stack, from gcc's call graphs
# (-fcallgraph-info=su, one .ci file per object): the frames of the longest
# chain of calls from bfi_enter or bfi_exit, plus what bfi_rec_entry.S
# pushes before it calls them (ENTRY bytes).  Fails above MAX bytes, and
# on recursion, which would leave the stack unbounded.
#
# awk -v MAX=512 -v ENTRY=88 -f bfi_rec_stack.awk *.ci
/^node:/ {
	title = $0; sub(/.*title: "/, "", title); sub(/".*/, "", title)
	if (match($0, /[0-9]+ bytes/))
		size[title] = substr($0, RSTART, RLENGTH - 6) + 0
}
/^edge:/ {
	src = $0; sub(/.*sourcename: "/, "", src); sub(/".*/, "", src)
	dst = $0; sub(/.*targetname: "/, "", dst); sub(/".*/, "", dst)
	if (!((src, dst) in seen)) {
		seen[src, dst] = 1
		out[src] = out[src] " " dst
	}
}
function deepest(f,    n, i, d, best, callee) {
	if (f in onpath) {
		printf "error: bfi_rec: %s recurses: its stack is unbounded\n", f > "/dev/stderr"
		failed = 1
		return 0
	}
	if (f in memo)
		return memo[f]
	onpath[f] = 1
	best = 0
	n = split(out[f], callee, " ")
	for (i = 1; i <= n; i++) {
		d = deepest(callee[i])
		if (d > best)
			best = d
	}
	delete onpath[f]
	memo[f] = size[f] + best
	return memo[f]
}
END {
	worst = 0
	for (r = 1; r <= 2; r++) {
		root = r == 1 ? "bfi_enter" : "bfi_exit"
		if (!(root in size)) {
			printf "error: bfi_rec: no call graph of %s\n", root > "/dev/stderr"
			exit 1
		}
		d = deepest(root) + ENTRY
		if (d > worst)
			worst = d
	}
	printf "bfi_rec: deepest stack %d bytes (of %d)\n", worst, MAX
	if (failed || worst > MAX) {
		if (worst > MAX)
			printf "error: bfi_rec: %d bytes of stack, over %d\n", worst, MAX > "/dev/stderr"
		exit 1
	}
}
