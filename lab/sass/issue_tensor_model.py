#!/usr/bin/env python3
"""The perf log's serial issue + tensor model of a key block, from steady-state loop counts.

A block pair (both consumer warpgroups, 2 x 64 rows x N keys) takes the consumers' issue time,
two warps per scheduler x the loop's instructions, plus the tensor core's time at nominal dense
rates: FP8 4096 and FP16 2048 multiply-adds per clock per SM. The model assumes the two do not
overlap. Throughput is score elements per clock. The model is a prediction aid: it is fitted on no
measurement, and its output is compared with measured ratios in lab/perf-log.md.

  python3 lab/sass/issue_tensor_model.py LOOPS.txt... [--out FILE]
LOOPS.txt: outputs of lab/sass/kernel_loops.sh ("NAME.sass: I instructions ..." lines, NAME an
instantiation: e4m3_block192, fp16_vt_block128, ...). The E4M3 kernels' row-sum wgmma (m64n8
against ones, l from the tensor core) is counted when the loop has 16 QGMMA for 192 keys."""
import argparse
import datetime
import re
import sys

FP8_MACS, FP16_MACS = 4096, 2048


def block_pair(name, instr, qgmma, keys):
    fp16 = name.startswith("fp16")
    macs_qk = 64 * keys * 128
    macs_pv = 64 * 128 * keys
    tc_rowsum = (not fp16) and qgmma > 4 + keys // 32
    t_tensor = 2 * (macs_qk / FP8_MACS + macs_pv / (FP16_MACS if fp16 else FP8_MACS)
                    + (64 * 8 * keys / FP8_MACS if tc_rowsum else 0))
    t_issue = 2 * instr
    return 2 * 64 * keys / (t_issue + t_tensor), t_issue, t_tensor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loops", nargs="+")
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = {}  # (source, kernel) -> [loop instructions, QGMMA count]
    for path in a.loops:
        tag = path
        for line in open(path):
            # Files that hold several libraries (f14-loops.txt, khead-loops.txt) head each with
            # "# NAME (...)".
            m = re.match(r"# ([\w.-]+) \(", line)
            if m:
                tag = m.group(1)
            m = re.match(r"(\w+)\.sass: (\d+) instructions", line)
            if m:
                rows[(tag, m.group(1))] = [int(m.group(2)), 0]
            m = re.match(r"\s+MUFU\.EX2 \d+, QGMMA (\d+)", line)
            if m and rows:
                rows[list(rows)[-1]][1] = int(m.group(1))
    out = [f"# serial issue + tensor model (lab/sass/issue_tensor_model.py {' '.join(a.loops)}), "
           f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
           "# source | kernel | keys per block | loop instructions | issue clk | tensor clk | score elements / clk"]
    thr = {}
    for (tag, name), (instr, qgmma) in rows.items():
        keys = int(re.search(r"block(\d+)", name).group(1))
        keys = 224 if "224" in tag else keys  # the 224-key variants keep the 192 file names
        e, ti, tt = block_pair(name, instr, qgmma, keys)
        thr[(tag, name)] = e
        out.append(f"{tag} | {name} | {keys} | {instr} | {ti:.0f} | {tt:.0f} | {e:.2f}")
    out.append("# ratios")
    keys = list(thr)
    for i, x in enumerate(keys):
        for y in keys[i + 1:]:
            out.append(f"{x[0]}:{x[1]} / {y[0]}:{y[1]} = {thr[x] / thr[y]:.3f}")
    text = "\n".join(out) + "\n"
    if a.out:
        open(a.out, "w").write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
