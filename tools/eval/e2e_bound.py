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
Usage: python3 tools/eval/e2e_bound.py results/<file>.json [--out results/e2e-bound-<commit>.txt]"""
import argparse
import datetime
import json
import pathlib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out")
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
    text = "\n".join(out) + "\n"
    if a.out:
        pathlib.Path(a.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
