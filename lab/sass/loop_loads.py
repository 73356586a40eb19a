#!/usr/bin/env python3
"""Where the loads of each steady-state loop sit (cuobjdump -sass listing), to see how long a
load has to arrive before its registers are read.
Usage: loop_loads.py file.sass [--kernel REGEX] [--min N]
Per loop of >= N instructions: its length, the index in the body of each LDG / LDS / LDL / STL,
and the register-to-register MOVs in its last 45 instructions (copies at the loop's end: each
waits for the load that writes its source, so a row loaded late in the body arrives late)."""
import re
import sys

args = sys.argv[1:]
kernel = args[args.index("--kernel") + 1] if "--kernel" in args else "."
min_n = int(args[args.index("--min") + 1]) if "--min" in args else 300
parts = re.split(r"\n\s+Function : (\S+)\n", open(args[0]).read())
pat = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
for i in range(1, len(parts), 2):
    name = parts[i]
    if not re.search(kernel, name):
        continue
    ins = [(int(m.group(1), 16), m.group(2).strip())
           for m in map(pat.search, parts[i + 1].splitlines()) if m]
    print(f"== {name}: {len(ins)} instructions")
    for addr, text in ins:
        m = re.search(r"BRA\s+0x([0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= addr:
            continue
        body = [t for a, t in ins if int(m.group(1), 16) <= a <= addr]
        if len(body) < min_n:
            continue
        ops = [re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for t in body]
        copies = sum(bool(re.fullmatch(r"MOV R\d+, R\d+", t)) for t in body[-45:])
        print(f"loop 0x{int(m.group(1), 16):x}-0x{addr:x}: {len(body)} instructions, "
              f"{copies} register copies at the end")
        print("  " + " ".join(f"{k}:{op}" for k, op in enumerate(ops)
                              if op in ("LDG", "LDS", "LDL", "STL")))
