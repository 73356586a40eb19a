"""What the harness runs on: the GPU (torch, the library, FA3, SDPA) or, for --dry-run, numpy
stand-ins (bench/dry_backend.py). Both give the harness the same few calls:

  gpu_name, versions, torch_clocks(), load_fa3() -> module | reason
  make_inputs(shape, seed) -> {'bf16': (q, k, v), 'quantized': qz}
  speed_runners(names, shape, sets, fa3, notes) -> name -> callable | reason;  qkv_gemm(shape)
  synthetic(kind, b, s, h, h_kv, d, seed)
  captures(folder, notes) -> [(name, (q, k, v), softmax_scale or None)]
  accuracy_methods(fa3, notes), quantize, quantize_v16(qz, v) (qz's Q, K with V in FP16),
  prepass(q, k, v, softmax_scale, vt16=False), ops (accuracy's math)
"""
from __future__ import annotations

from pathlib import Path

FA3_PIN = "fa3-fwd==0.0.3"
ACC_SHAPE = dict(b=2, s=8192, h=32, h_kv=32, d=128)
ACC_SHAPE_DRY = dict(b=1, s=192, h=4, h_kv=2, d=128)


class Gpu:
    def __init__(self, lib_path: str, notes: list):
        import torch
        import accuracy
        import fp8attn_calls
        import methods
        if not torch.cuda.is_available():
            raise SystemExit("harness: no CUDA device (use --dry-run to rehearse on the CPU)")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_grad_enabled(False)  # FA3's autograd.Function saves nothing then
        self.torch, self.acc, self.fc, self.m, self.notes = torch, accuracy, fp8attn_calls, methods, notes
        self.lib = fp8attn_calls.load(lib_path)
        self.gpu_name = torch.cuda.get_device_name()
        self.versions = f"torch {torch.__version__}, CUDA {torch.version.cuda}"
        self.ops = accuracy
        self.quantize = fp8attn_calls.quantize_per_head
        self.quantize_v16 = fp8attn_calls.with_fp16_v
        self.prepass = lambda q, k, v, scale=None, vt16=False: fp8attn_calls.prepass(
            self.lib, q, k, v, scale, vt16)

    def torch_clocks(self) -> dict:
        try:
            return {"torch_clock_rate_mhz": self.torch.cuda.clock_rate()}
        except Exception as e:  # needs pynvml
            return {"torch_clock_rate_mhz": f"unavailable: {type(e).__name__}"}

    def load_fa3(self):
        return self.m.load_fa3()

    def make_inputs(self, shape, seed):
        q, k, v = self.acc.synthetic("gaussian", shape.b, shape.sq, shape.h, shape.h_kv,
                                     shape.d, seed, "cuda", sk=shape.sk)
        return {"bf16": (q, k, v), "quantized": self.quantize(q, k, v)}

    def speed_runners(self, names, shape, sets, fa3, notes):
        return self.m.speed_runners(names, shape, sets, self.lib, fa3, notes)

    def qkv_gemm(self, shape):
        return self.m.qkv_gemm(shape)

    def synthetic(self, kind, b, s, h, h_kv, d, seed):
        return self.acc.synthetic(kind, b, s, h, h_kv, d, seed, "cuda")

    def captures(self, folder, notes):
        if not Path(folder).is_dir():
            notes.append(f"no captured activations carried ({folder} absent)")
            return []
        return [(n, tuple(t.contiguous() for t in qkv), scale)
                for n, qkv, scale in self.acc.load_captures(Path(folder), "cuda")]

    def accuracy_methods(self, fa3, notes):
        return self.m.accuracy_methods(self.lib, notes, fa3)

    def release(self):
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()


class Dry:
    def __init__(self):
        import dry_backend  # first: it sets numpy's thread count
        import numpy
        self.d = dry_backend
        self.gpu_name = "cpu (dry run)"
        self.versions = f"numpy {numpy.__version__} (DRY RUN: no torch, no kernel)"
        self.ops = dry_backend
        self.quantize = dry_backend.Quantized
        self.quantize_v16 = dry_backend.with_fp16_v
        self.prepass = dry_backend.Prepass

    def torch_clocks(self):
        return {"torch_clock_rate_mhz": "dry run"}

    def load_fa3(self):
        return "stand-in"  # replaced below: the dry run exercises both FA3 columns

    def make_inputs(self, shape, seed):
        return self.d.make_inputs(shape, seed)

    def speed_runners(self, names, shape, sets, fa3, notes):
        return self.d.speed_runners(names, shape, sets, fa3, notes)

    def qkv_gemm(self, shape):
        return self.d.qkv_gemm(shape)

    def synthetic(self, kind, b, s, h, h_kv, d, seed):
        return self.d.synthetic(kind, b, s, h, h_kv, d, seed)

    def captures(self, folder, notes):
        if not Path(folder).is_dir():
            notes.append(f"no captured activations given ({folder} absent)")
            return []
        found = self.d.load_captures(Path(folder))
        notes.append(f"dry run: captures cut to their first {self.d.DRY_CAPTURE_TOKENS} tokens")
        return found

    def accuracy_methods(self, fa3, notes):
        return self.d.accuracy_methods(fa3)

    def release(self):
        pass


def backend(args, notes: list):
    if not args.dry_run:
        return Gpu(args.lib, notes)
    dry = Dry()
    dry.load_fa3 = lambda: dry.d  # a module object: FA3 "present" (stand-ins by name)
    return dry


def release():
    """Between rows: the GPU's cache of freed blocks back, so one row's sets do not pile up."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except ImportError:
        pass
