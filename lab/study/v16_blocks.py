#!/usr/bin/env python3
"""What a 16-bit V plane for the sink block and the diagonal block would buy: the *floor* (exact
FP64 attention on the rounded operands, against exact attention on the BF16 data) when V keeps
its BF16 values for keys in [0, 128) (the sink block) and in the query's own 128-key block (the
diagonal block), E4M3 elsewhere. model/ has no such option (model/scheme.h), so this is a NumPy
re-implementation of the operand rounding only, checked against the model's own floor records on
the same data before it is trusted (the `check` fields: NumPy floor over the model's floor, for
all-E4M3 V).

Three operand sets, on the prefix2048 and tail512 subsets (every head, both masks):
  V only      Q, K exact (BF16), V E4M3 per channel after smoothing (the model's "in: V rounding")
  kernel      Q E4M3 per token, K E4M3 per 128-key block after K smoothing, V as above
              (the model's "kernel spelled" operands; its floor = the kernel's floor)
  Q,K hilo    the kernel's, with Q and K as E4M3 hi+lo (the model's "lift: Q,K hilo")
Writes results/numerics-v16-blocks.json; lab/study/analyze.py puts it in the report.

usage: lab/study/v16_blocks.py
"""
import datetime
import json
import pathlib
import platform
import subprocess
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_subsets  # noqa: E402
import run_study  # noqa: E402
import schemes as S  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCK = 128
E4M3_MAX = 448.0


def bf16_to_f64(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f32(x):
    return np.asarray(x, dtype=np.float32)


def e4m3(y):
    """RNE to E4M3 (3 mantissa bits, min normal 2^-6, subnormal step 2^-9), saturated at 448."""
    y = f32(y).astype(np.float64)
    a = np.abs(y)
    e = np.floor(np.log2(np.maximum(a, 2.0 ** -9)))
    step = 2.0 ** (np.maximum(e, -6) - 3)
    r = np.round(a / step) * step
    return np.sign(y) * np.minimum(r, E4M3_MAX)


def quant(x, amax):
    """x / scale rounded to E4M3, times scale; scale = amax / 448 in FP32 (amax 0: scale 1)."""
    scale = f32(np.where(amax > 0, f32(amax) / f32(E4M3_MAX), 1.0))
    return e4m3(f32(x) / scale) * scale.astype(np.float64)


def v_e4m3(v):
    """(s, d) V of one kv head: smoothed by its FP32 channel mean, E4M3 per channel, mean added back."""
    mean = f32(v).mean(axis=0, dtype=np.float32)
    c = f32(f32(v) - mean)
    return quant(c, np.abs(c).max(axis=0)) + mean.astype(np.float64)


def quant_hilo(x, amax):
    """E4M3 hi+lo: x = scale * (hi + lo / 16), lo the E4M3 rounding of the residual times 16."""
    scale = f32(np.where(amax > 0, f32(amax) / f32(E4M3_MAX), 1.0))
    y = f32(x) / scale
    hi = e4m3(y)
    return (hi + e4m3(f32((y - hi) * 16.0)) / 16.0) * scale.astype(np.float64)


def qk_e4m3(q, k, hilo=False):
    """Q per token; K smoothed (mean over tokens) then per 128-key block. The K mean adds a per-row
    constant to the scores (exact under softmax), so the floor uses the smoothed K directly."""
    qz = quant_hilo if hilo else quant
    qd = qz(q, np.abs(f32(q)).max(axis=1, keepdims=True))
    kc = f32(f32(k) - f32(k).mean(axis=0, dtype=np.float32))
    kd = np.empty_like(kc, dtype=np.float64)
    for b in range(0, len(kc), BLOCK):
        kd[b:b + BLOCK] = qz(kc[b:b + BLOCK], np.abs(kc[b:b + BLOCK]).max())
    return qd, kd


def attention_p(q, k, causal):
    """Softmax of the scores; causal bottom-right aligned (query i sees keys j <= i + sk - sq)."""
    s = (q @ k.T) / np.sqrt(q.shape[1])
    if causal:
        sq, sk = s.shape
        s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq), s, -np.inf)
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=1, keepdims=True)


def main():
    raw = {}
    for part in ("captures",):
        d = json.loads((ROOT / f"results/numerics-raw-{part}.json").read_text())
        for r in run_study.expand(d):
            raw[(r["dataset"], r["causal"], r["scheme"], r["reference"])] = r
    out = []
    files = [f for f in sorted((ROOT / "data/cache/study").glob("*.safetensors"))
             if ("-prefix" in f.stem and "-h" not in f.stem.split("-prefix")[-1]) or "-tail" in f.stem]
    for f in files:
        t, _ = make_subsets.read_safetensors(f)
        q, k, v = (bf16_to_f64(t[n][0]) for n in "qkv")  # (s, h, d)
        s, h, hk = q.shape[0], q.shape[1], k.shape[1]
        sk = k.shape[0]
        qblk = (np.arange(s) + sk - s) // BLOCK  # queries are the last s positions
        keep16 = (qblk[:, None] == (np.arange(sk) // BLOCK)[None, :])
        keep16[:, :BLOCK] = True
        for causal in (False, True):
            acc = {n: 0.0 for n in ("v_all8", "v_mix", "k_all8", "k_mix", "k_vexact", "h_all8", "h_mix")}
            for hq in range(h):
                kv = hq // (h // hk)
                qh, kh, vh = q[:, hq], k[:, kv], v[:, kv]
                v8 = v_e4m3(vh)
                p = attention_p(qh, kh, causal)
                ref = p @ vh
                pm = np.where(keep16, p, 0.0)
                o8 = p @ v8
                acc["v_all8"] += ((o8 - ref) ** 2).sum()
                acc["v_mix"] += ((o8 + pm @ (vh - v8) - ref) ** 2).sum()
                qd, kd = qk_e4m3(qh, kh)
                pk = attention_p(qd, kd, causal)
                ok8 = pk @ v8
                acc["k_all8"] += ((ok8 - ref) ** 2).sum()
                acc["k_mix"] += ((ok8 + np.where(keep16, pk, 0.0) @ (vh - v8) - ref) ** 2).sum()
                acc["k_vexact"] += ((pk @ vh - ref) ** 2).sum()
                qd, kd = qk_e4m3(qh, kh, hilo=True)
                ph = attention_p(qd, kd, causal)
                oh8 = ph @ v8
                acc["h_all8"] += ((oh8 - ref) ** 2).sum()
                acc["h_mix"] += ((oh8 + np.where(keep16, ph, 0.0) @ (vh - v8) - ref) ** 2).sum()
            n = s * h * q.shape[2]
            rm = {kk: float(np.sqrt(vv / n)) for kk, vv in acc.items()}
            bf = raw[(f.stem, causal, "bf16-flash", "end_to_end")]["rmse"]
            m_v = raw[(f.stem, causal, S.ABLATION["in: V rounding"], "floor")]["rmse"]
            m_k = raw[(f.stem, causal, S.KERNEL_SPELLED, "floor")]["rmse"]
            rec = {"dataset": f.stem, "causal": causal, "bf16_flash_rmse": bf,
                   "v_only_floor_ratio_all_e4m3": rm["v_all8"] / bf, "v_only_floor_ratio_v16_sink_diag": rm["v_mix"] / bf,
                   "kernel_floor_ratio_all_e4m3": rm["k_all8"] / bf, "kernel_floor_ratio_v16_sink_diag": rm["k_mix"] / bf,
                   "kernel_floor_ratio_v_bf16": rm["k_vexact"] / bf,
                   "qk_hilo_floor_ratio_all_e4m3": rm["h_all8"] / bf, "qk_hilo_floor_ratio_v16_sink_diag": rm["h_mix"] / bf,
                   "check_qk_hilo_numpy_over_model_floor": rm["h_all8"] / raw[(f.stem, causal, S.LIFTS["lift: Q,K hilo"], "floor")]["rmse"],
                   "check_v_only_numpy_over_model_floor": rm["v_all8"] / m_v,
                   "check_kernel_numpy_over_model_floor": rm["k_all8"] / m_k}
            out.append(rec)
            print(json.dumps({kk: (round(vv, 4) if isinstance(vv, float) else vv) for kk, vv in rec.items()}))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = {"command": "lab/study/v16_blocks.py", "commit": commit, "machine": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "note": "floors (exact FP64 attention on rounded operands vs exact on the BF16 data) over bf16-flash's end-to-end RMSE; "
                    "v16_sink_diag: V kept BF16 for keys [0, 128) and the query's own 128-key block"}
    (ROOT / "results/numerics-v16-blocks.json").write_text(json.dumps({**meta, "records": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
