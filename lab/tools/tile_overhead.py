#!/usr/bin/env python3
"""The per-tile cost beyond the key blocks' own periods, from a phase_trace.py JSON
(lab/probes/phase_trace.py): a tile of sk keys is sk / 192 block periods of steady-state work;
the call's time per tile (ms over the tiles the busiest SM runs: ceil(128-row tiles / 132 SMs),
the lower estimate of the fixed cost) at an SM clock f
is that plus the tile's fixed cost. The clock is not recorded, so the cost is given at the lowest
clock the longest shape allows (its tile no shorter than its blocks' periods) and at 1.98 GHz.
usage: python3 lab/tools/tile_overhead.py PHASE.json [SMS]"""
import datetime as dt
import json
import math
import sys

BLOCK_N, BLOCK_M, MAX_GHZ = 192, 128, 1.98


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    d = json.load(open(sys.argv[1]))
    sms = int(sys.argv[2]) if len(sys.argv) == 3 else 132
    rows = []
    for s in d["shapes"]:
        tiles = s["b"] * s["h"] * math.ceil(s["sq"] / BLOCK_M)
        us_tile = s["ms"] * 1000 / math.ceil(tiles / sms)
        work = s["sk"] / BLOCK_N * s["period_cycles"]["0.5"]
        rows.append((s, us_tile, work))
    f_min = max(work / (us * 1000) for _, us, work in rows)  # GHz: no tile shorter than its work
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {sys.argv[1]} ({d.get('gpu')}, {d.get('date')}); command: python3 lab/tools/tile_overhead.py "
          f"{' '.join(sys.argv[1:])}; written {now}")
    print(f"# lowest SM clock the shapes allow: {f_min:.3f} GHz")
    print("# b sq sk | us a tile | blocks x median period (cycles) | fixed cost at the lowest clock: "
          "cycles, share of the tile, periods | at 1.98 GHz: cycles, share, periods")
    for s, us, work in rows:
        out = []
        for f in (f_min, MAX_GHZ):
            tile = us * 1000 * f
            out.append(f"{tile - work:.0f} {(tile - work) / tile:.2f} {(tile - work) / s['period_cycles']['0.5']:.2f}")
        print(f"{s['b']} {s['sq']} {s['sk']} | {us:.2f} | {work:.0f} | {out[0]} | {out[1]}")


if __name__ == "__main__":
    main()
