#!/usr/bin/env python3
"""A minimal stackcollapse of `perf script` output, for the tests and benches.

stdin: perf script's samples (a header line "comm pid [cpu] time:", then
frames "addr sym+off (dso)", leaf first). stdout: folded stacks, root first,
"comm;frame;...;leaf COUNT", sorted. Kernel frames get "_[k]"; the
0xffff... markers perf puts between user and kernel chains are left out.

With three file arguments DSOS ADDRS MARKERS it also writes the binaries
frames came from (one per line), "basename addr sym" for each user frame,
and the count of markers, for a test to compare with the agent's names.
"""
import os
import re
import sys
from collections import Counter

head = re.compile(r"^(\S.*?)\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?\d+\.\d+:")
frame = re.compile(r"^\s+([0-9a-fA-F]+)\s+(.*?)\s+\((.*)\)\s*$")
extras = len(sys.argv) == 4
out, dsos, addrs = Counter(), set(), {}
comm, frames, markers = None, [], 0


def flush():
    global comm, frames
    if comm is not None:
        out[";".join([comm] + frames[::-1])] += 1
    comm, frames = None, []


for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush()
        continue
    if not line[0].isspace():
        flush()
        m = head.match(line)
        comm = (m.group(1) if m else line.split()[0]).replace(" ", "_").replace(";", ":")
        continue
    m = frame.match(line)
    if not m or comm is None:
        continue
    addr, sym, dso = m.groups()
    if int(addr, 16) == 0xFFFFFFFFFFFFFFFF:
        markers += 1
        continue
    if not sym or sym.startswith("[unknown]"):
        sym = "[unknown]"
    else:
        sym = re.sub(r"\+0x[0-9a-fA-F]+$", "", sym)
    if dso.startswith("[kernel"):
        sym += "_[k]"
    elif extras and dso.startswith("/"):
        dsos.add(dso)
        addrs[(os.path.basename(dso), int(addr, 16))] = sym
    frames.append(sym.replace(";", ":").replace(" ", "_"))
flush()
for k, v in sorted(out.items()):
    print(k, v)
if extras:
    with open(sys.argv[1], "w") as f:
        f.write("".join(d + "\n" for d in sorted(dsos)))
    with open(sys.argv[2], "w") as f:
        f.write("".join(f"{b} {a:x} {s}\n" for (b, a), s in sorted(addrs.items())))
    with open(sys.argv[3], "w") as f:
        f.write(f"{markers}\n")
