"""A GGUF checkpoint as the capture needs it: hyperparameters, FP32 weights, the tokenizer.

Weights are dequantized once, tensor by tensor, into FP32 .npy files in a cache folder and then
memory-mapped: the forward pass touches one layer at a time, so resident memory stays near one
layer's weights however large the model is.
"""
from __future__ import annotations

import dataclasses
import os
import time

import gguf
import numpy as np
from gguf.quants import dequantize
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

# The pre-tokenizer split of Qwen2 (tokenizer.ggml.pre = "qwen2" / "deepseek-r1-qwen"), as in the
# model's tokenizer.json.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Llama 3 (tokenizer.ggml.pre = "llama-bpe").
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# GPT-2's split, used by SmolLM (tokenizer.ggml.pre = "smollm") after every digit is split off alone
# (its tokenizer.json: Digits(individual_digits) then ByteLevel(use_regex)).
GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
SPLIT_BY_PRE = {"qwen2": QWEN2_SPLIT, "deepseek-r1-qwen": QWEN2_SPLIT, "llama-bpe": LLAMA3_SPLIT,
                "smollm": GPT2_SPLIT}
DIGITS_FIRST = {"smollm"}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str
    arch: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    rope_theta: float
    rms_eps: float
    vocab_size: int
    bos_id: int | None
    add_bos: bool
    # Qwen2 GGUFs keep HF's q/k row order: RoPE rotates channel i with i + d/2 ("NEOX" style).
    # Llama GGUFs permute q/k rows so that RoPE rotates adjacent pairs (2i, 2i+1).
    rope_neox: bool
    quant: str


def _field(reader: gguf.GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


class GgufModel:
    def __init__(self, path: str, cache_dir: str):
        self.path = path
        self.reader = gguf.GGUFReader(path)
        self.tensors = {t.name: t for t in self.reader.tensors}
        self.cache_dir = cache_dir
        self.config = self._read_config()
        self._check_complete()

    def _read_config(self) -> ModelConfig:
        r = self.reader
        arch = _field(r, "general.architecture")
        if arch not in ("qwen2", "llama"):
            raise ValueError(f"{self.path}: architecture {arch!r} is not supported (qwen2, llama)")
        n_heads = _field(r, f"{arch}.attention.head_count")
        d_model = _field(r, f"{arch}.embedding_length")
        head_dim = _field(r, f"{arch}.attention.key_length", d_model // n_heads)
        bos = _field(r, "tokenizer.ggml.bos_token_id")
        add_bos = bool(_field(r, "tokenizer.ggml.add_bos_token", arch == "llama"))
        ftype = _field(r, "general.file_type")
        try:
            quant = gguf.LlamaFileType(ftype).name.removeprefix("MOSTLY_")
        except ValueError:
            quant = str(ftype)
        return ModelConfig(
            name=_field(r, "general.name"), arch=arch,
            n_layers=_field(r, f"{arch}.block_count"), d_model=d_model, n_heads=n_heads,
            n_kv_heads=_field(r, f"{arch}.attention.head_count_kv", n_heads), head_dim=head_dim,
            d_ff=_field(r, f"{arch}.feed_forward_length"),
            rope_theta=float(_field(r, f"{arch}.rope.freq_base", 10000.0)),
            rms_eps=float(_field(r, f"{arch}.attention.layer_norm_rms_epsilon")),
            vocab_size=len(r.fields["tokenizer.ggml.tokens"].data), bos_id=bos, add_bos=add_bos,
            rope_neox=(arch == "qwen2"), quant=quant)

    def _check_complete(self) -> None:
        """A truncated download shows as tensor data that runs past the end of the file."""
        end = max(t.data_offset + t.n_bytes for t in self.reader.tensors)
        size = os.path.getsize(self.path)
        if end > size:
            raise ValueError(f"{self.path}: tensor data ends at {end} bytes, file has {size}")
        expected = 2 + 7 * self.config.n_layers + (0 if "output.weight" not in self.tensors else 1)
        if len(self.tensors) < expected:
            raise ValueError(f"{self.path}: {len(self.tensors)} tensors, expected >= {expected}")

    # --- weights -------------------------------------------------------------------------
    def weight(self, name: str) -> np.ndarray:
        """FP32 weight, (out, in) for matrices, memory-mapped from the dequantized cache."""
        if name == "output.weight" and name not in self.tensors:
            name = "token_embd.weight"  # tied embeddings
        path = os.path.join(self.cache_dir, name + ".npy")
        if not os.path.exists(path):
            t = self.tensors[name]
            w = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            w = w.reshape([int(n) for n in reversed(t.shape)])  # GGUF lists ne0 (inner) first
            os.makedirs(self.cache_dir, exist_ok=True)
            np.save(path + ".tmp.npy", w)
            os.replace(path + ".tmp.npy", path)
            del w
        return np.load(path, mmap_mode="r")

    def dequantize_all(self, log=print) -> float:
        t0 = time.time()
        for name in self.tensors:
            self.weight(name)
        dt = time.time() - t0
        log(f"dequantized {len(self.tensors)} tensors into {self.cache_dir} in {dt:.0f} s")
        return dt

    def layer(self, i: int) -> dict[str, np.ndarray]:
        p = f"blk.{i}."
        out = {k[len(p):]: self.weight(k) for k in self.tensors if k.startswith(p)}
        return out

    # --- tokenizer -----------------------------------------------------------------------
    def tokenizer(self) -> Tokenizer:
        r = self.reader
        if _field(r, "tokenizer.ggml.model") != "gpt2":
            raise ValueError(f"{self.path}: only byte-level BPE (gpt2) tokenizers are supported")
        pre = _field(r, "tokenizer.ggml.pre")
        if pre not in SPLIT_BY_PRE:
            raise ValueError(f"{self.path}: pre-tokenizer {pre!r} is not supported")
        tokens = _field(r, "tokenizer.ggml.tokens")
        merges = [tuple(m.split(" ", 1)) for m in _field(r, "tokenizer.ggml.merges")]
        vocab = {t: i for i, t in enumerate(tokens)}
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
        if pre in ("qwen2", "deepseek-r1-qwen"):
            tok.normalizer = normalizers.NFC()
        splits = [pre_tokenizers.Digits(individual_digits=True)] if pre in DIGITS_FIRST else []
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            *splits,
            pre_tokenizers.Split(Regex(SPLIT_BY_PRE[pre]), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        return tok

    def encode(self, text: str) -> list[int]:
        ids = self.tokenizer().encode(text, add_special_tokens=False).ids
        if self.config.add_bos:
            ids = [self.config.bos_id] + ids
        return ids
