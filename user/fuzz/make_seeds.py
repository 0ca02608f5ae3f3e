#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write the starting seeds of each harness's corpus from the golden
vectors (user/lib/tests/vectors) and the examples of the uapi header.

    make_seeds.py CORPUS_DIR

Each harness reads a selector byte first (see its source); the seeds carry
one.  `make fuzz` grows the corpora from these; the committed corpora are
these seeds plus what a run found, minimised with libFuzzer's -merge=1.
"""
import hashlib
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "lib", "tests", "vectors")


def put(corpus, harness, data):
    d = os.path.join(corpus, harness)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def golden(name):
    out = {}
    with open(os.path.join(VECTORS, name)) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            k, v = line.split()
            out[k] = bytes.fromhex(v)
    return out


def stream_seeds(corpus):
    ex = bytes.fromhex(
        "4100 00c0843de807 4200d209d309f403 81 4300c801 c001 6200 c08001"
        "02 440007 460005 4001 450001 41004f80897ae807".replace(" ", ""))
    huge_unit = bytes.fromhex("410000008080808080808080800160006000")
    # NAME records (uapi 2.2): "worker-1", then a rename with UTF-8
    names = bytes.fromhex(
        "410000c0843de80700 4200d209d30900 4900 08 776f726b65722d31 81"
        "4200d209d30900 4900 05 c3a93c2278 82 410002c0843de80700"
        .replace(" ", ""))
    # MARK and its ARGs (uapi 2.2): probe 7, -3, 5000000000, 258
    marks = bytes.fromhex(
        "410000c0843de80700 4200d209d30900 4a00 07 03 01 00 4b00 05"
        "4b00 80e497d012 4b00 8202 81 410002c0843de80700".replace(" ", ""))
    for sel in (0x00, 0x03, 0x80, 0x8f):
        put(corpus, "fuzz_stream", bytes([sel]) + ex)
        put(corpus, "fuzz_stream", bytes([sel]) + names)
        put(corpus, "fuzz_stream", bytes([sel]) + marks)
    put(corpus, "fuzz_stream", bytes([0x05]) + huge_unit)


def msg_seeds(corpus, msgs):
    for k, v in msgs.items():
        for sel in (0, 1):	# version 1 and 2, every id allowed
            put(corpus, "fuzz_bfp_msg", bytes([sel]) + v)
    # a control connection as HQ reads it, and HQ's answers as an agent does
    hq_ctl = b"".join(msgs[k] for k in msgs if k.startswith("heartbeat"))
    put(corpus, "fuzz_bfp_msg", bytes([4 << 1]) + hq_ctl + msgs["data_break"])
    put(corpus, "fuzz_bfp_msg", bytes([1 << 1]) + msgs["configuration"] +
        msgs["start"] + msgs["stop"])


def config_seeds(corpus, msgs):
    cfg = msgs["configuration"][5:]		# id, u32 length
    put(corpus, "fuzz_config", b"\x00" + cfg)
    put(corpus, "fuzz_config", b"\x01" + b'{"bufferMemoryBudget":2,'
        b'"exclusions":[],"heartbeatInterval":1,"inclusions":[],'
        b'"numDataSenders":4,"queueRetryCount":3,"runId":1}')
    put(corpus, "fuzz_config", b"\x01" + b'{"runId":-2,"heartbeatInterval"'
        b':250,"exclusions":["a.*","b"],"inclusions":["c"]}')
    # a chain of empty superclass descriptors, past the nesting limit
    desc = bytes([0x72, 0, 0]) + bytes(8) + bytes([2, 0, 0, 0x78])
    put(corpus, "fuzz_config", b"\x00\xac\xed\x00\x05\x73" + desc * 40 +
        b"\x70")


def regex_seeds(corpus):
    names = b"main\nfn_1\nskip_2\n" + b"a" * 300 + b"_\n\xff\xfe\n"
    for sel, pat in ((0, b".*"), (0, b"prog!skip_.*"), (1, b"prog!fn"),
                     (0, b"^prog![^_]+$"), (0, b"(|)(\\1\\1)*"),
                     (0, b"prog!(a+)+$"), (0, b"prog!(a|a)*\\1$"),
                     (0, b"prog!("), (0, b"(" * 40),
                     (0, b"(?:a|b|c|d|e|f|g|h){1000}")):
        put(corpus, "fuzz_regex", bytes([sel]) + pat + b"\n" + names)


def flow_seeds(corpus):
    with open(os.path.join(VECTORS, "flow.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            hexes = line.split()[1]
            for sel in (0, 3):
                put(corpus, "fuzz_flow", bytes([sel]) + bytes.fromhex(hexes))
    put(corpus, "fuzz_flow", b"\x80# ids\nprog!main=1\r\nprog!a=b=2\n\n")


def tiny_elf(corpus, src):
    # a static program without libc, as small as the linker makes it
    out = os.path.join(corpus, ".tiny.elf")
    try:
        subprocess.run(["cc", "-x", "c", "-", "-o", out, "-O1", "-nostdlib",
                        "-static", "-fno-asynchronous-unwind-tables",
                        "-Wl,-n", "-Wl,--build-id=none", "-Wl,-z,norelro"],
                       input=src.encode(), check=True)
        with open(out, "rb") as f:
            return f.read()
    finally:
        if os.path.exists(out):
            os.unlink(out)


def elf_seeds(corpus):
    # an ELF header alone; then a tiny program with two functions
    eh = bytearray(64)
    eh[0:4] = b"\x7fELF"
    eh[4:7] = bytes([2, 1, 1])
    struct.pack_into("<HHIQQQIHHHHHH", eh, 16, 3, 62, 1, 0, 0, 0, 0, 64,
                     0, 0, 0, 0, 0)
    put(corpus, "fuzz_elf", bytes(eh))
    src = ("__attribute__((noinline)) int f1(int x) { return x * 3; }\n"
           "__attribute__((noinline)) int f2(int x) { return f1(x) + 1; }\n"
           "void _start(void) { f2(1); for (;;); }\n")
    put(corpus, "fuzz_elf", tiny_elf(corpus, src))


def sdt_seeds(corpus):
    # argument texts (selector 0), then a tiny program with USDT notes (1)
    for arg in ("-4@%eax", "1@%ah", "8@$-1", "-4@-20(%rbp)",
                "8@16(%rax,%rbx,8)", "-4@g(%rip)", "4@0x601040", "%rdi",
                "3@%eax", "8@(%rax"):
        put(corpus, "fuzz_sdt", b"\x00" + arg.encode())
    src = ("#include <sys/sdt.h>\n"
           "int g = 5;\n"
           "void _start(void) { int x = g * 3;\n"
           "  DTRACE_PROBE(p, zero); DTRACE_PROBE2(p, two, x, g);\n"
           "  for (;;); }\n")
    put(corpus, "fuzz_sdt", b"\x01" + tiny_elf(corpus, src))


def nla(t, payload):
    n = 4 + len(payload)
    return struct.pack("<HH", n, t) + payload + bytes((-n) % 4)


def nlmsg(mtype, payload, flags=0):
    return struct.pack("<IHHII", 16 + len(payload), mtype, flags, 0, 0) + \
        payload


FAMILY = 0x1d
CMDS = {"caps": 1, "attach": 2, "start": 4, "status": 10, "get_opt": 11,
        "methods": 13, "event": 14}


def genl(cmd, attrs):
    return nlmsg(FAMILY, bytes([cmd, 1, 0, 0]) + attrs)


def ack():
    return nlmsg(2, struct.pack("<i", 0) + nlmsg(FAMILY, b"")[:16])


def nl_seeds(corpus):
    u32 = lambda v: struct.pack("<I", v)
    u64 = lambda v: struct.pack("<Q", v)
    caps = genl(1, nla(1, u32(1)) + nla(2, u64(0x7f)) + nla(3, u32(2)) +
                nla(4, nla(1, u32(64)) + nla(2, u32(4096))))
    put(corpus, "fuzz_nl", bytes([CMDS["caps"]]) + caps + ack())
    res = genl(2, nla(8, nla(9, nla(1, u32(0)) + nla(2, u32(0))) +
                  nla(9, nla(1, u32(1)) + nla(2, u32(13)))))
    put(corpus, "fuzz_nl", bytes([CMDS["attach"]]) + res + ack())
    put(corpus, "fuzz_nl", bytes([CMDS["start"]]) +
        genl(4, nla(10, b"\x02")) + ack())
    status = genl(10, nla(10, b"\x02") + nla(11, u32(3)) + nla(12, u32(1)) +
                  nla(13, nla(14, nla(1, u32(0)) + nla(2, u64(5)))))
    put(corpus, "fuzz_nl", bytes([CMDS["status"]]) + status + ack())
    opt = genl(11, nla(17, nla(1, u32(1)) + nla(2, u64(10))))
    put(corpus, "fuzz_nl", bytes([CMDS["get_opt"]]) + opt + ack())
    meth = genl(13, nla(5, u32(42)) + nla(1, b"/bin/prog\0") +
                nla(2, u64(0x1130)) + nla(3, u32(1)) + nla(4, u32(3)) +
                nla(5 + 0, u32(42)))
    done = nlmsg(3, struct.pack("<i", 0))
    put(corpus, "fuzz_nl", bytes([CMDS["methods"]]) + meth + meth + done)
    ev = genl(14, nla(18, b"\x01") + nla(5, u32(42)) + nla(19, u32(500)))
    put(corpus, "fuzz_nl", bytes([CMDS["event"]]) + ev)
    put(corpus, "fuzz_nl", bytes([CMDS["status"]]) +
        nlmsg(2, struct.pack("<i", -1) + nlmsg(FAMILY, b"")[:16]))


def script_feed(slot, data):
    """fuzz_hq ops feeding data to slot: chunks of 8k+1 bytes."""
    out = b""
    while data:
        k = min((len(data) - 1) // 8, 31)
        n = k * 8 + 1
        out += bytes([k << 2 | slot]) + data[:n]
        data = data[n:]
    return out


def hq_seeds(corpus, msgs):
    ctl, dat = 0, 1
    data = (msgs["map_thread_name"] + msgs["map_method_signature"] +
            msgs["map_exception"] + msgs["method_entry"] +
            msgs["method_exit"] + msgs["exception"] +
            msgs["exception_bubble"] + msgs["marker"])
    base = script_feed(ctl, msgs["hello"]) + \
        script_feed(dat, b"\x1e\x00") + script_feed(dat, data)
    eof = lambda s: bytes([(32 + 1) << 2 | s])	# op & 4: EOF
    tick = bytes([(32 + 2) << 2])			# op & 8: time passes
    put(corpus, "fuzz_hq", base + script_feed(ctl, msgs["heartbeat_Tracing"] +
        msgs["heartbeat_Shutdown"]) + eof(dat) + eof(ctl) + tick)
    put(corpus, "fuzz_hq", base + script_feed(ctl, b"\x09\x00\x00\x00\x01")
        + tick)
    put(corpus, "fuzz_hq", base + script_feed(ctl, msgs["error"]) + tick)
    put(corpus, "fuzz_hq", script_feed(ctl, b"\x00\x02") +
        script_feed(dat, b"\x1e\x00") + tick + script_feed(2, b"\x10\x10"))


def collector_seeds(corpus, msgs):
    seq = (msgs["configuration"] + msgs["suspend"] + msgs["start"] +
           msgs["unsuspend"] + msgs["pause"] + msgs["unpause"] +
           msgs["stop"])
    put(corpus, "fuzz_collector_control", b"\x00" + seq)
    put(corpus, "fuzz_collector_control", bytes([32 << 2]) + seq)
    put(corpus, "fuzz_collector_control", b"\x02" + msgs["start"] +
        msgs["configuration"] + msgs["error"])
    json = (b'{"bufferMemoryBudget":2,"exclusions":[".*"],'
            b'"heartbeatInterval":1,"inclusions":["prog!m.*"],'
            b'"numDataSenders":1,"queueRetryCount":3,"runId":1}')
    put(corpus, "fuzz_collector_control", b"\x01\x01" +
        struct.pack(">H", len(json)) + json + msgs["start"])


def counters_seeds(corpus):
    """The counters wire (test_counters_wire.c's golden bytes): requests
    to the agent (selector 0) and what the agent sends (selector 1)."""
    h = ("12000000 03000000 727373 01000000 01000000 03000000 0700")
    to_agent = ["01", "02 03000000 727373 09000000 436f6c6c6563746f72",
                "02 03000000 727373 ffffffff", "03 3412", "03 ffff", "7f"]
    to_insp = ["00 0100 0100 " + h, "00 0100 0000",
               "01 03000000 727373 09000000 436f6c6c6563746f72 ffffffff",
               "02 00 " + h, "02 02", "02 03", "03 00",
               "04 0080b5f7f57f9f08 0000 0400 feffffff 0100 0800"
               " 0807060504030201 0001 0800 000000000000f83f ffff"]
    for sel, msgs in ((0, to_agent), (1, to_insp)):
        for m in msgs:
            put(corpus, "fuzz_counters",
                bytes([sel]) + bytes.fromhex(m.replace(" ", "")))
        put(corpus, "fuzz_counters", bytes([sel]) + b"".join(
            bytes.fromhex(m.replace(" ", "")) for m in msgs))
    # the agent's side: requests against fuzz_collector_counters' replay
    def s32(b):
        return struct.pack("<i", len(b)) + b

    def add(name, cat):
        return b"\x02" + s32(name) + s32(cat)

    reqs = [b"\x01", add(b"prog!main calls", b"Method"),
            add(b"prog!work calls/s", b"Method"), add(b"cpu1 lost", b"Ring"),
            add(b"RSS", b"Collector"), add(b"mode", b"Kernel"),
            add(b"prog!main calls", b"Method"), add(b"nothing", b"Method"),
            b"\x03\x10\x00", b"\x03\xff\xff", b"\x7f", b"\x55junk"]
    for r in reqs:
        put(corpus, "fuzz_collector_counters", b"\x80" + r)
    put(corpus, "fuzz_collector_counters", b"\x80" + b"".join(reqs[:-2]))


def dgram(run, stream, packet, msgs):
    """A bftrace UDP datagram (user/lib/wire/bfu_dgram.h)."""
    return (b"BU\x01" + bytes([run, stream, len(msgs)]) + b"\x00\x00" +
            struct.pack(">I", packet) + b"".join(msgs))


def udp_seeds(corpus, msgs):
    rec = lambda op, d: bytes([op]) + struct.pack(">H", len(d)) + d
    maps = [msgs["map_thread_name"], msgs["map_method_signature"],
            msgs["map_exception"]]
    events = [msgs["method_entry"], msgs["method_exit"], msgs["exception"],
              msgs["exception_bubble"], msgs["marker"]]
    first = dgram(0, 0, 0, maps + events[:2])
    second = dgram(0, 1, 0, events[2:])
    # in order; the second first, then a duplicate, a foreign one, a tick
    put(corpus, "fuzz_hq_udp", b"\x00" + rec(0, first) + rec(0, second))
    put(corpus, "fuzz_hq_udp", b"\x00" + rec(0, second) + rec(0, first) +
        rec(0, first) + rec(1, first) + rec(2, second))
    # cut short, a count too high, a header alone
    put(corpus, "fuzz_hq_udp", b"\x00" + rec(0, first[:-3]) +
        rec(0, first[:5] + b"\x09" + first[6:]) + rec(0, first[:12]))


def main():
    corpus = sys.argv[1]
    msgs = golden("bytefrog-v1.txt")
    stream_seeds(corpus)
    msg_seeds(corpus, msgs)
    config_seeds(corpus, msgs)
    flow_seeds(corpus)
    elf_seeds(corpus)
    sdt_seeds(corpus)
    nl_seeds(corpus)
    hq_seeds(corpus, msgs)
    collector_seeds(corpus, msgs)
    regex_seeds(corpus)
    counters_seeds(corpus)
    udp_seeds(corpus, msgs)


if __name__ == "__main__":
    main()
