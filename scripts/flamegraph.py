#!/usr/bin/env python3
"""Render folded stacks ("a;b;c 42" per line, as bfhq writes them) as a
flame graph in SVG: one box per call path, as wide as its weight, callers
below callees.  Reads standard input, writes standard output."""
import argparse
import html
import sys

WIDTH = 1200
ROW = 18
FONT = 12
CHAR_W = 7  # average glyph width at FONT, to decide what text fits


def parse(lines):
    root = {"name": "all", "weight": 0, "children": {}}
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, _, weight = line.rpartition(" ")
        try:
            w = int(weight)
        except ValueError:
            sys.exit(f"flamegraph: line {n}: no weight at the end: {line!r}")
        if w < 0:
            sys.exit(f"flamegraph: line {n}: negative weight")
        node = root
        node["weight"] += w
        for frame in stack.split(";"):
            node = node["children"].setdefault(
                frame, {"name": frame, "weight": 0, "children": {}})
            node["weight"] += w
    return root


def depth_of(node):
    return 1 + max((depth_of(c) for c in node["children"].values()), default=0)


def color(name):
    h = sum(name.encode()) * 2654435761 % 2**32
    return f"rgb({205 + h % 50},{90 + (h >> 8) % 120},{40 + (h >> 16) % 40})"


def boxes(node, x, level, scale, out):
    w = node["weight"] * scale
    if w < 0.5:
        return
    out.append((x, level, w, node["name"], node["weight"]))
    cx = x
    for child in sorted(node["children"].values(), key=lambda c: c["name"]):
        boxes(child, cx, level + 1, scale, out)
        cx += child["weight"] * scale


def render(root, title):
    levels = depth_of(root)
    height = (levels + 2) * ROW
    scale = (WIDTH - 20) / root["weight"] if root["weight"] else 0
    items = []
    boxes(root, 10, 0, scale, items)
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="monospace" font-size="{FONT}">',
        f'<rect width="100%" height="100%" fill="#fdfdf5"/>',
        f'<text x="{WIDTH / 2}" y="{ROW}" text-anchor="middle" '
        f'font-size="{FONT + 3}">{html.escape(title)}</text>',
    ]
    for x, level, w, name, weight in items:
        y = height - (level + 1) * ROW
        label = html.escape(name)
        svg.append(
            f'<g><title>{label} ({weight})</title>'
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 1}" '
            f'fill="{color(name)}" rx="2"/>')
        fits = int((w - 6) // CHAR_W)
        if fits >= 3:
            text = name if len(name) <= fits else name[:fits - 2] + ".."
            svg.append(f'<text x="{x + 3:.1f}" y="{y + ROW - 5}">'
                       f'{html.escape(text)}</text>')
        svg.append('</g>')
    svg.append('</svg>')
    return "\n".join(svg) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--title", default="flame graph")
    args = ap.parse_args()
    root = parse(sys.stdin)
    if not root["weight"]:
        sys.exit("flamegraph: no stack has any weight")
    sys.stdout.write(render(root, args.title))


if __name__ == "__main__":
    main()
