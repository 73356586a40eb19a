"""Per-tile cost from Nsight Compute runs of lab/probes/ncu_vs_fa3.sh (fixed clocks): for each
method, the elapsed cycles of two non-causal shapes with the same number of tiles (so the same
number of waves) and different key lengths give a cost per key and a fixed cost per tile:
    cycles per tile = elapsed / ceil(tiles / SMs),  fixed = per_tile(short) - keys(short) * per_key.
Also prints, per shape, the SM-active share of the elapsed cycles and executed instructions per tile.
    python3 lab/tools/ncu_tile_fit.py NCU.tar.gz SHORT_TAG LONG_TAG [OTHER_TAG ...] [--methods M ...]
  (tags as in the CSV names without the method: b4-s4096-h32-32-c0; the CSVs are named
  METHOD-TAG.csv; --methods default fp8attn fa3_fp8, the last one the yardstick of the model lines)"""
import csv
import io
import math
import re
import sys
import tarfile


def metrics(text):
    rows = [r for r in csv.reader(io.StringIO(text)) if len(r) > 10]
    h = rows[0]
    i_m, i_v = h.index("Metric Name"), h.index("Metric Value")
    return {r[i_m]: float(r[i_v].replace(",", "")) for r in rows[1:]
            if r[i_m] and re.fullmatch(r"[0-9.,]+", r[i_v] or "x")}


def main(path, *args):
    tags = list(args)
    methods = ["fp8attn", "fa3_fp8"]
    if "--methods" in tags:
        i = tags.index("--methods")
        tags, methods = tags[:i], tags[i + 1:]
    with tarfile.open(path) as t:
        files = {m.name.split("/")[-1][:-4]: t.extractfile(m).read().decode() for m in t.getmembers()
                 if m.name.endswith(".csv")}
    print(f"# python3 lab/tools/ncu_tile_fit.py {path} {' '.join(args)}")
    fits = {}
    for method in methods:
        per = {}
        for tag in tags:
            m = metrics(files[f"{method}-{tag}"])
            b, s, h = (int(x) for x in re.match(r"b(\d+)-s(\d+)-h(\d+)-", tag).groups())
            tiles = b * h * math.ceil(s / 128)
            waves = math.ceil(tiles / m["# SMs"])
            per[tag] = (s, m["Elapsed Cycles"] / waves)
            print(f"{method:8s} {tag:22s} tiles {tiles:5d} waves {waves:3d} cycles/tile {per[tag][1]:9.0f}  "
                  f"SM active {m['SM Active Cycles'] / m['Elapsed Cycles']:.3f} of elapsed  "
                  f"instructions/tile {m['Executed Instructions'] / tiles:9.0f}")
        (s0, c0), (s1, c1) = per[tags[0]], per[tags[1]]
        k = (c1 - c0) / (s1 - s0)
        fits[method] = (k, c0 - s0 * k)
        print(f"{method:8s} fit over {tags[0]} and {tags[1]}: {k:.2f} cycles per key + {c0 - s0 * k:.0f} per tile")
    yard = methods[-1]
    for m in methods[:-1]:
        for s in (1024, 2048, 4096, 8192, 16384):
            ours, theirs = (fits[x][1] + s * fits[x][0] for x in (m, yard))
            print(f"model, tile of {s:5d} keys: {m} / {yard} speed {theirs / ours:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
