#!/usr/bin/env python3
"""Lab probe (GPU): fp8attn against FA3 FP8 with every call inside a CUDA graph, so that neither
call's host side is timed (the eager protocol of bench/speed.py timed FA3's Python entry at short
shapes: lab/perf-log.md, twenty-fifth session, "the lead beyond the sweep"). This is what a
CUDA-graph caller (decode, captured prefill) sees, at the power cap, unlike Nsight Compute's
locked clocks (lab/probes/ncu_durations.sh).

Per shape: input sets enough to miss L2 (bench/sweep.py input_sets), each method's runners built
on a side stream (fp8attn_calls binds the stream when a runner is built), one graph per method of
--calls calls rotating through the sets, then --rounds rounds of one replay each, the order
reversed every round; a replay's CUDA-event time / --calls is one sample. Medians per method.

  python3 lab/probes/graph_h2h.py --lib .carry/libfp8attn.so --out DIR \
      [--shapes "8,512,512,32,8,1;4,128,8192,32,8,1"] [--mode fp8attn] [--calls 20] [--rounds 40]
      [--in-context] [--mode fp8attn_accurate --peer fa3_bf16]
Writes DIR/graph_h2h.json (probe_doc: command, commit, GPU, date, records) and prints a table.

--in-context (twenty-eighth session) adds the in-context twin: graphs whose every call follows
the model's QKV GEMM (bench/methods.qkv_gemm), each call timed alone by a pair of external
timing events captured into the graph (torch.cuda.Event(external=True): event record nodes), so
the GEMM is not timed; per-call samples, replays alternated as above (protocol
cuda_graph_in_context).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import probe_doc  # noqa: E402

import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
import speed  # noqa: E402
from sweep import Shape, input_sets  # noqa: E402

DEFAULT_SHAPES = "8,512,512,32,8,1;4,128,8192,32,8,1;16,1024,1024,32,32,1;16,1024,1024,32,32,0"


def parse_shapes(text: str) -> list[Shape]:
    out = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        b, sq, sk, h, hkv, c = (int(x) for x in item.split(","))
        out.append(Shape(b, sq, sk, h, hkv, 128, bool(c)))
    return out


def build(shape: Shape, lib, fa3, mode: str, side, peer: str = "fa3_fp8") -> dict:
    """{method: [a runner per input set]}, built on `side` (the capture stream). The accurate mode
    runs on FP16 V^T (fp8attn_calls.with_fp16_v); the peer FA3 BF16 on the BF16 data."""
    g = torch.Generator(device="cuda").manual_seed(shape.b * 7919 + shape.sq)
    runners = {mode: [], peer: []}
    with torch.cuda.stream(side):
        for _ in range(input_sets(shape)):
            q = torch.randn((shape.b, shape.sq, shape.h, 128), device="cuda", dtype=torch.bfloat16, generator=g)
            k = torch.randn((shape.b, shape.sk, shape.h_kv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
            v = torch.randn((shape.b, shape.sk, shape.h_kv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
            qz = fc.quantize_per_head(q, k, v)
            if mode == fc.ACCURATE:
                runners[mode].append(fc.accurate_runner(lib, fc.with_fp16_v(qz, v), shape.causal))
            else:
                runners[mode].append(fc.kernel_runner(lib, qz, shape.causal, mode))
            runners[peer].append(methods._fa3_fp8(fa3, qz, shape.causal) if peer == "fa3_fp8"
                                 else methods._fa3_bf16(fa3, q, k, v, shape.causal))
        for fns in runners.values():  # warm-up, outside the graphs
            for fn in fns:
                fn()
    side.synchronize()
    return runners


def capture(fns: list, calls: int, side) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for j in range(calls):
            fns[j % len(fns)]()
    return graph


def capture_in_context(fns: list, calls: int, side, gemm):
    """A graph of `calls` calls, each after the GEMM, each between two external timing events."""
    marks = [(torch.cuda.Event(enable_timing=True, external=True),
              torch.cuda.Event(enable_timing=True, external=True)) for _ in range(calls)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for j in range(calls):
            gemm()
            marks[j][0].record()
            fns[j % len(fns)]()
            marks[j][1].record()
    return graph, marks


def time_graphs_in_context(graphs: dict, rounds: int) -> dict:
    """{method: per-call ms samples}: one replay per method per round, order reversed each round,
    each call's own time read from its events after the replay."""
    names = list(graphs)
    for name in names:
        graphs[name][0].replay()
    torch.cuda.synchronize()
    samples = {n: [] for n in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            graph, marks = graphs[name]
            graph.replay()
            torch.cuda.synchronize()
            samples[name] += [a.elapsed_time(b) for a, b in marks]
    return samples


def time_graphs(graphs: dict, calls: int, rounds: int) -> dict:
    """{method: per-call ms samples}: one replay per method per round, order reversed each round."""
    names = list(graphs)
    for name in names:  # one untimed replay each
        graphs[name].replay()
    torch.cuda.synchronize()
    events = {n: [] for n in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graphs[name].replay()
            stop.record()
            events[name].append((start, stop))
    torch.cuda.synchronize()
    return {n: [s.elapsed_time(e) / calls for s, e in ev] for n, ev in events.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="b,sq,sk,h,hkv,causal;...")
    ap.add_argument("--mode", default="fp8attn", choices=["fp8attn", "fp8attn_exact", "fp8attn_accurate"])
    ap.add_argument("--peer", default="fa3_fp8", choices=["fa3_fp8", "fa3_bf16"])
    ap.add_argument("--calls", type=int, default=20, help="calls per graph")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--in-context", action="store_true", help="also each call after the QKV GEMM")
    args = ap.parse_args()
    fa3 = methods.load_fa3()
    if isinstance(fa3, str):
        print(f"graph_h2h: {fa3}")
        return 1
    lib = fc.load(args.lib)
    side = torch.cuda.Stream()
    records = []
    pr = args.peer

    def report(shape, samples, runners, protocol, label, **extra):
        """Each method's record of one protocol's samples, and the ratio line."""
        med = {n: statistics.median(s) for n, s in samples.items()}
        for name in med:
            records.append(speed.record(name, shape, samples[name], protocol,
                                        input_sets=len(runners[name]), **extra))
        print(f"  {shape.label():40s} {label}{args.mode} {med[args.mode] * 1e3:9.1f} us  {pr} "
              f"{med[pr] * 1e3:9.1f} us  {args.mode} / {pr} (speed) {med[pr] / med[args.mode]:.4f}", flush=True)

    for shape in parse_shapes(args.shapes):
        runners = build(shape, lib, fa3, args.mode, side, pr)
        graphs = {name: capture(fns, args.calls, side) for name, fns in runners.items()}
        report(shape, time_graphs(graphs, args.calls, args.rounds), runners, "cuda_graph_alternating", "",
               calls_per_sample=args.calls)
        if args.in_context:
            gemm = methods.qkv_gemm(shape)
            with torch.cuda.stream(side):
                gemm()
            side.synchronize()
            ctx_graphs = {name: capture_in_context(fns, args.calls, side, gemm) for name, fns in runners.items()}
            report(shape, time_graphs_in_context(ctx_graphs, args.rounds), runners, "cuda_graph_in_context",
                   "in context: ", calls_per_graph=args.calls)
            del ctx_graphs, gemm
        del graphs, runners
        torch.cuda.empty_cache()
    path = probe_doc.write(args.out, "graph_h2h.json", records, torch.cuda.get_device_name())
    print(f"graph_h2h: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
