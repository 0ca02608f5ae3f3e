#!/usr/bin/env python3
"""Check a browser's screenshot of a flame graph against the SVG it shows.

Usage: flame-render-check.py [--start N] [--label NAME] [--frame NAME]
                             [--size WxH] SVG PNG

Prints TAP result lines numbered from N (no plan: the caller owns it) and
exits 1 if any failed.  The PNG is decoded with the standard library only
(zlib, struct), so the check runs wherever python3 does.

The SVG says what must be on screen: every frame is a <rect> with a solid
fill inside a <g>.  A screenshot passes when the frames cover about the
area their rectangles add up to, each frame's fill is on screen at that
frame's place, and there are as many distinct fills as the SVG uses.  An
SVG the browser cannot draw (an XML error page, an unstyled XML tree, a
blank page) fails all three."""
import argparse
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A pixel whose every channel is at least this is background: the page's
# white or the SVG's #fdfdf5.  The frames' fills have a channel below 90.
BLANK = 235
# How far a channel may drift from the SVG's value (colour management,
# rounding).
TOLERANCE = 3
# Frames narrower than this are not sampled: their centre column can be
# anti-aliased.
MIN_SAMPLE_WIDTH = 6.0


class Tap:
    def __init__(self, start):
        self.n = start - 1
        self.failed = 0

    def result(self, good, desc, notes=()):
        self.n += 1
        if not good:
            self.failed += 1
        print(f"{'ok' if good else 'not ok'} {self.n} - {desc}")
        for line in notes:
            print(f"# {line}")
        return good


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    """Returns (width, height, rows), each row a bytes of R,G,B triples."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != PNG_SIGNATURE:
        raise ValueError("not a PNG (bad signature)")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("truncated chunk header")
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc_at = pos + 8 + length
        if crc_at + 4 > len(data):
            raise ValueError(f"truncated {ctype!r} chunk")
        (crc,) = struct.unpack(">I", data[crc_at:crc_at + 4])
        if zlib.crc32(ctype + body) != crc:
            raise ValueError(f"bad CRC in {ctype!r} chunk")
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
        pos = crc_at + 4
    if ihdr is None or not idat:
        raise ValueError("no IHDR or no IDAT")
    width, height, depth, colour, _, _, interlace = ihdr
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type "
                         f"{colour}, interlace {interlace}")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise ValueError(f"image data is {len(raw)} bytes, "
                         f"expected {height * (stride + 1)}")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        at = y * (stride + 1)
        ftype = raw[at]
        line = bytearray(raw[at + 1:at + 1 + stride])
        if ftype == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif ftype == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif ftype == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                up_left = prev[i - channels] if i >= channels else 0
                line[i] = (line[i] + paeth(left, prev[i], up_left)) & 0xFF
        elif ftype != 0:
            raise ValueError(f"row {y}: unknown filter type {ftype}")
        prev = line
        if channels == 4:
            # A screenshot is opaque; should it not be, this is what a
            # viewer shows on white.
            rgb = bytearray(width * 3)
            for x in range(width):
                r, g, b, a = line[4 * x:4 * x + 4]
                for c, v in enumerate((r, g, b)):
                    rgb[3 * x + c] = (v * a + 255 * (255 - a)) // 255
            rows.append(bytes(rgb))
        else:
            rows.append(bytes(line))
    return width, height, rows


def parse_rgb(fill):
    fill = fill.strip()
    if fill.startswith("rgb(") and fill.endswith(")"):
        return tuple(int(v) for v in fill[4:-1].split(","))
    if fill.startswith("#") and len(fill) == 7:
        return tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))
    raise ValueError(f"fill {fill!r} is neither rgb() nor #rrggbb")


def local(tag):
    return tag.rsplit("}", 1)[-1]


def read_svg(path):
    """Returns the frames, (x, y, w, h, (r, g, b), title), and all text."""
    tree = ET.parse(path)
    frames, texts = [], []
    for g in tree.getroot().iter():
        if local(g.tag) == "text" and g.text:
            texts.append(g.text)
        if local(g.tag) != "g":
            continue
        rect = next((e for e in g if local(e.tag) == "rect"), None)
        title = next((e.text for e in g if local(e.tag) == "title"), "")
        if rect is None:
            continue
        frames.append((float(rect.get("x")), float(rect.get("y")),
                       float(rect.get("width")), float(rect.get("height")),
                       parse_rgb(rect.get("fill")), title or ""))
    return frames, texts


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--start", type=int, default=1)
    ap.add_argument("--label", action="append", default=[],
                    help="a frame name that must be drawn as a text label")
    ap.add_argument("--frame", action="append", default=[],
                    help="a frame name that must have a frame (its <title>)")
    ap.add_argument("--size", default="1200x800")
    ap.add_argument("svg")
    ap.add_argument("png")
    args = ap.parse_args()
    tap = Tap(args.start)

    try:
        frames, texts = read_svg(args.svg)
        svg_error = None
    except (ET.ParseError, ValueError, TypeError) as e:
        frames, texts, svg_error = [], [], str(e)
    tap.result(svg_error is None and len(frames) > 0,
               f"the SVG parses, {len(frames)} frames",
               [svg_error] if svg_error else [])
    for name in args.label:
        tap.result(name in texts, f"the SVG labels a frame {name!r}")
    titles = [t for *_, t in frames]
    for name in args.frame:
        tap.result(any(t.startswith(name + " (") for t in titles),
                   f"the SVG has a frame {name!r}")

    want_w, want_h = (int(v) for v in args.size.split("x"))
    try:
        width, height, rows = read_png(args.png)
        png_error = None
    except (OSError, ValueError, zlib.error) as e:
        png_error = str(e)
    good = png_error is None and (width, height) == (want_w, want_h)
    tap.result(good, f"the screenshot is a {args.size} PNG",
               [png_error] if png_error else
               [] if good else [f"it is {width}x{height}"])
    if not good or not frames:
        for what in ("coverage", "fills at their frames", "distinct fills"):
            tap.result(False, f"screenshot {what}: nothing to check")
        return 1

    ink, counts = 0, {}
    for row in rows:
        for x in range(0, len(row), 3):
            px = row[x:x + 3]
            if min(px) < BLANK:
                ink += 1
                counts[px] = counts.get(px, 0) + 1
    total = width * height
    area = 0.0
    for x, y, w, h, *_ in frames:
        cw = max(0.0, min(x + w, width) - max(x, 0.0))
        ch = max(0.0, min(y + h, height) - max(y, 0.0))
        area += cw * ch
    measured, expected = ink / total, area / total
    # Rounded corners and anti-aliased edges take a little, the title and
    # text outside frames add a little.
    tap.result(0.8 * expected <= measured <= 1.2 * expected + 0.005,
               f"screenshot coverage {measured:.2%} of the pixels is not "
               f"background; the frames' area is {expected:.2%}")

    misses = []
    sampled = 0
    for x, y, w, h, fill, title in frames:
        if w < MIN_SAMPLE_WIDTH or y + 1 >= height:
            continue
        sampled += 1
        # The top pixel row of the frame is above its label's glyphs.
        px = tuple(rows[int(y) + 1][3 * int(x + w / 2):3 * int(x + w / 2) + 3])
        if any(abs(a - b) > TOLERANCE for a, b in zip(px, fill)):
            misses.append(f"{title}: rgb{fill} expected at "
                          f"({int(x + w / 2)},{int(y) + 1}), found rgb{px}")
    tap.result(sampled > 0 and not misses,
               f"screenshot shows {sampled - len(misses)} of {sampled} "
               f"frames' fills at their places", misses[:10])

    # Only fills big enough to be counted; a sliver of a frame may be
    # all anti-aliased edge.
    fills = {f for _, _, w, h, f, _ in frames if w * h >= 100}
    present = set()
    for fill in fills:
        for px, c in counts.items():
            if c >= 40 and all(abs(a - b) <= TOLERANCE
                               for a, b in zip(px, fill)):
                present.add(fill)
                break
    tap.result(len(fills) >= 3 and present == fills,
               f"screenshot has {len(present)} of the SVG's {len(fills)} "
               f"distinct fills ({len(counts)} colours in all)",
               [f"missing rgb{f}" for f in sorted(fills - present)][:10])
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
