#!/usr/bin/env python3
"""The best end-to-end / kernel-only ratio a pre-pass can allow at a shape, from a results file.

End to end = pre-pass + kernel, one after the other. With the pre-pass moving B bytes (every byte
its kernels read and write, as the `prepass` records count them) at best at the device-to-device
copy's bandwidth measured beside it, the ratio cannot exceed t_k / (t_k + B / copy), t_k the
kernel's time on the pre-pass's outputs (`fp8attn_kernel_on_prepass_inputs`). Also: the same with
the pre-pass's measured bandwidth, and with each input read once (the useful bytes); the measured
end-to-end ratio against the kernel on the pre-pass's outputs and against the kernel-only record
(`fp8attn`, the harness's random E4M3 inputs), and the kernel's time inside the end-to-end call
(end-to-end minus the pre-pass's median) beside the kernel's alone on the same data.

Against FA3 BF16 (issue 17), for every sweep row with an `fp8attn` record paired head to head with
`fa3_bf16`: the kernel's ratio to FA3 BF16 times the best a separate pre-pass allows, each input
read once and each output written once (useful bytes, from the shape) at the device-to-device
copy bandwidth, i.e. the highest "BF16 in" ratio to FA3 BF16 that any pre-pass run before this
kernel could reach. The copy bandwidth is the median of the `prepass` records' `copy_gbps`, of
this file or of --copy-from (a file whose run measured it). And the same for the rotary pair
(issue 17's in-model comparison: our rope + quantize pass in place of the model's BF16 rotary
kernel, against that rotary kernel + FA3 BF16), both passes at copy speed on their useful bytes.
Beside them, what the pre-pass took inside the measured end-to-end call (its median minus the
kernel's, both paired with FA3 BF16) and the bandwidth that is on the useful bytes.
Usage: python3 tools/eval/e2e_bound.py results/<file>.json [--copy-from results/<f>.json]
           [--out results/e2e-bound-<commit>.txt]"""
import argparse
import datetime
import json
import pathlib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out")
    ap.add_argument("--copy-from")
    a = ap.parse_args()
    d = json.loads(pathlib.Path(a.results).read_text())
    out = [f"# end-to-end bound from {a.results} (commit {d['commit']}, {d.get('gpu_name', d['gpu'])}, {d['date']})",
           f"# command: python3 tools/eval/e2e_bound.py {a.results}; written {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
           "# b s h h_kv causal | kernel ms | pre-pass bytes moved, useful | copy GB/s, pre-pass GB/s | "
           "bound at copy speed (bytes moved) | bound at copy speed (useful bytes) | at measured pre-pass speed | measured end-to-end ratio | "
           "end-to-end / kernel-only record | kernel ms inside end-to-end (e2e - pre-pass)"]
    for pp in d.get("prepass", []):
        if not pp.get("default") or pp.get("variant", "v2") != "v2":
            continue
        for causal in (False, True):
            def tf(method):
                for r in d["speed"]:
                    if (r["method"], r["causal"], r["b"], r["sq"], r["h"], r["h_kv"]) == (method, causal, pp["b"], pp["s"], pp["h"], pp["h_kv"]):
                        return r["tflops_median"]
            k, e = tf("fp8attn_kernel_on_prepass_inputs"), tf("fp8attn_end_to_end")
            if not k:
                continue
            flops = 4 * pp["b"] * pp["h"] * pp["s"] * pp["s"] * 128 / (2 if causal else 1)
            tk = flops / (k * 1e12)
            moved, useful, copy, gbps = pp["bytes_moved"], pp["bytes_useful"], pp["copy_gbps"], pp["gbps"]
            r_moved = tk / (tk + moved / (copy * 1e9))
            r_useful = tk / (tk + useful / (copy * 1e9))
            r_meas = tk / (tk + moved / (gbps * 1e9))
            ko = tf("fp8attn")
            inside = flops / (e * 1e12) - pp["prepass_ms_median"] * 1e-3 if e else float("nan")
            out.append(f"{pp['b']} {pp['s']} {pp['h']} {pp['h_kv']} {int(causal)} | {tk * 1e3:.3f} | {moved} {useful} | "
                       f"{copy:.0f} {gbps:.0f} | {r_moved:.3f} | {r_useful:.3f} | {r_meas:.3f} | "
                       f"{(e / k) if e else float('nan'):.3f} | {(e / ko) if e and ko else float('nan'):.3f} | "
                       f"{inside * 1e3:.3f}")
    out += vs_fa3_bf16(d, a)
    text = "\n".join(out) + "\n"
    if a.out:
        pathlib.Path(a.out).write_text(text)
    print(text, end="")


def useful_bytes(b, sq, sk, h, h_kv, d=128):
    """BF16 Q, K, V read once; E4M3 Q, K, V^T written once. Scales and statistics are left out:
    the pre-pass records' `bytes_useful` are within 2% above it (tests/python/test_e2e_bound.py)."""
    return 2 * b * sq * h * d + 2 * 2 * b * sk * h_kv * d + b * sq * h * d + 2 * b * sk * h_kv * d


def rotary_bytes(b, sq, sk, h, h_kv, d=128):
    """A BF16 rotary kernel: Q and K read and written once in BF16."""
    return 4 * b * sq * h * d + 4 * b * sk * h_kv * d


def vs_fa3_bf16(d, a):
    src = json.loads(pathlib.Path(a.copy_from).read_text()) if a.copy_from else d
    copies = sorted(pp["copy_gbps"] for pp in src.get("prepass", []) if pp.get("copy_gbps"))
    shape = lambda x: (x["b"], x["sq"], x["sk"], x["h"], x["h_kv"], x["causal"])  # noqa: E731
    rec = {(x["method"], x.get("protocol"), shape(x)): x for x in d.get("speed", [])}
    pairs = {}
    for (method, protocol, key), r in rec.items():
        peer = rec.get(("fa3_bf16", "head_to_head:fp8attn", key))
        if method == "fp8attn" and protocol == "head_to_head:fa3_bf16" and peer:
            pairs[key] = (r, peer)
    if not copies or not pairs:
        return ["", "# against FA3 BF16: no copy bandwidth or no fp8attn / fa3_bf16 pairing in the inputs"]
    copy = copies[len(copies) // 2]
    out = ["", f"# against FA3 BF16: copy bandwidth {copy:.0f} GB/s (median of the prepass records of "
               f"{a.copy_from or a.results}); kernel and FA3 BF16 from {a.results}",
           "# b sq sk h h_kv causal | fp8attn / FA3 BF16 (kernel alone, head to head) | pre-pass at copy speed "
           "(useful bytes) / kernel alone | best BF16-in / FA3 BF16 with a separate pre-pass | "
           "best rope + quantize pair / (BF16 rotary + FA3 BF16) pair | measured: end to end - kernel, ms "
           "(useful GB/s)"]
    for key, (r, peer) in sorted(pairs.items()):
        b, sq, sk, h, h_kv, causal = key
        tk, t_fa3 = r["ms_median"] * 1e-3, peer["ms_median"] * 1e-3
        useful = useful_bytes(b, sq, sk, h, h_kv)
        t_pass = useful / (copy * 1e9)  # the pre-pass at copy speed
        bound = tk / (tk + t_pass)
        ratio = r["tflops_median"] / peer["tflops_median"]
        pair = (t_fa3 + rotary_bytes(b, sq, sk, h, h_kv) / (copy * 1e9)) / (tk + t_pass)
        e2e = rec.get(("fp8attn_end_to_end", "head_to_head:fa3_bf16", key))
        pre = e2e["ms_median"] * 1e-3 - tk if e2e else float("nan")
        out.append(f"{b} {sq} {sk} {h} {h_kv} {int(causal)} | {ratio:.3f} | {bound:.3f} | {ratio * bound:.3f} | "
                   f"{pair:.3f} | {pre * 1e3:.3f} ({useful / pre / 1e9:.0f})")
    return out


if __name__ == "__main__":
    main()
