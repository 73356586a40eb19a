"""The study's scheme lists: fp8attn-eval spellings (model/scheme.h) and the short labels the
report uses. One place, so that the runner and the analysis agree."""

# The kernel's numerics spelled without the pre-pass mirror (Q E4M3 per token, K per 128-key
# block, V per channel, K and V smoothed, P E4M3 with the kernel's offset 5 and running-max slack
# 3 (fp8attn.h, since perf-log v12), one-level accumulation over 128-key blocks
# (the block the kernel runs when K descales come per 128 keys), l the sum of the rounded P (the
# tensor core's row sum, model::kernel_numerics, since commit 71c468f), BF16 output), with the
# Hopper FP8 accumulator model: the base of the leave-one-out ablation. The study checks it
# against fp8attn-kernel:acc=hopper (same figures expected).
KERNEL_SPELLED = ("fa3-fp8:q=e4m3.token:k=e4m3.block:v=e4m3.channel:smooth_k=1:smooth_v=1:block=128"
                  ":p_offset=5:slack=3:l_rounded=1:acc=hopper")
# Everything exact except what a leave-one-in row adds: BF16 operands (the data are BF16, so
# exact), FP32 P, FP32 accumulation and FP32 output.
EXACT = "bf16-flash:p=fp32:o=fp32"

# label -> spec. "kernel options": what the shipped kernel + pre-pass can run today.
CANDIDATES = {
    "bf16-flash": "bf16-flash",
    "fa3-fp8": "fa3-fp8-hopper",
    "fa3-fp8-rot": "fa3-fp8-rot-hopper",
    "fa3-fp8 (fp32 acc)": "fa3-fp8",
    "fa3-fp8-rot (fp32 acc)": "fa3-fp8-rot",
    "sage2-like": "sage2-like",
    "kernel": "fp8attn-kernel:acc=hopper",
    "kernel (fp32 acc)": "fp8attn-kernel",
    "kernel 2-level": "fp8attn-kernel:two_level=1:acc=hopper",
    "kernel rot": "fp8attn-kernel-rot:acc=hopper",
    "kernel no-smooth-k": "fp8attn-kernel:smooth_k=0:acc=hopper",
    "kernel no-smooth-v": "fp8attn-kernel:smooth_v=0:acc=hopper",
    "kernel q-block": "fp8attn-kernel:prepass_q_block=1:acc=hopper",
    "kernel v-head": "fp8attn-kernel:prepass_v_head=1:acc=hopper",
    "kernel hilo": "fp8attn-kernel-hilo:acc=hopper",
    "kernel hilo (fp32 acc)": "fp8attn-kernel-hilo",
    "kernel hilo 1-level": "fp8attn-kernel-hilo:two_level=0:l_rounded=0:acc=hopper",
    "kernel hilo rot": "fp8attn-kernel-hilo:hadamard_qk=1:acc=hopper",
    "kernel hilo no-smooth-v": "fp8attn-kernel-hilo:smooth_v=0:acc=hopper",
    # One K descale per (batch, kv head) lets the kernel run its faster 192-key blocks; the
    # pre-pass has no such option, so these are spelled without the pre-pass mirror.
    "kernel k-head": KERNEL_SPELLED.replace("k=e4m3.block", "k=e4m3.head").replace("block=128", "block=192"),
    "kernel k-head rot": KERNEL_SPELLED.replace("k=e4m3.block", "k=e4m3.head").replace("block=128", "block=192") + ":hadamard_qk=1",
}

# What would lift the floor: operand precisions the kernel does not offer (no cost measured).
LIFTS = {
    "lift: V bf16": KERNEL_SPELLED + ":v=bf16:smooth_v=0",
    "lift: V hilo": KERNEL_SPELLED + ":v=e4m3.channel.hilo",
    "lift: Q,K hilo": KERNEL_SPELLED + ":q=e4m3.token.hilo:k=e4m3.block.hilo",
    "lift: Q,K bf16": KERNEL_SPELLED + ":q=bf16:k=bf16:smooth_k=0",
    "lift: Q,K int8": KERNEL_SPELLED + ":q=int8.token:k=int8.block",
    "lift: Q,K,V hilo": KERNEL_SPELLED + ":q=e4m3.token.hilo:k=e4m3.block.hilo:v=e4m3.channel.hilo",
    "lift: Q,K,V hilo + P hilo 2-level": KERNEL_SPELLED
    + ":q=e4m3.token.hilo:k=e4m3.block.hilo:v=e4m3.channel.hilo:p=e4m3hilo:two_level=1:l_rounded=1",
}

# Attribution: leave one in (exact + one source) and leave one out (kernel - one source).
ABLATION = {
    "kernel spelled": KERNEL_SPELLED,
    "kernel rot spelled": KERNEL_SPELLED + ":hadamard_qk=1",
    "exact": EXACT,
    "in: Q,K rounding": EXACT + ":q=e4m3.token:k=e4m3.block:smooth_k=1",
    "in: V rounding": EXACT + ":v=e4m3.channel:smooth_v=1",
    "in: P rounding": EXACT + ":p=e4m3:p_offset=8",
    "in: accumulation": EXACT + ":acc=hopper",
    "in: output rounding": EXACT + ":o=bf16",
    "out: Q,K rounding": KERNEL_SPELLED + ":q=bf16:k=bf16:smooth_k=0",
    "out: V rounding": KERNEL_SPELLED + ":v=bf16:smooth_v=0",
    "out: P rounding": KERNEL_SPELLED + ":p=fp32",
    "out: accumulation": KERNEL_SPELLED + ":acc=fp32",
    "out: output rounding": KERNEL_SPELLED + ":o=fp32",
}

# The model's component schemes (error budget), run as named.
COMPONENTS = [
    "only-qk-tensor", "only-qk-token", "only-qk-token-smoothk", "only-qk-token-rot",
    "only-qk-int8-token-smoothk", "only-qk-hilo-smoothk", "only-p-e4m3", "only-p-e4m3-hilo",
    "only-v-channel", "only-v-int8-channel", "only-v-hilo", "all-e4m3-tensor",
]

# Per query head: the shipped default and the leave-one-in sources.
PER_HEAD = {k: v for k, v in {**CANDIDATES, **ABLATION}.items()
            if k in ("bf16-flash", "kernel", "kernel rot", "kernel hilo", "in: Q,K rounding", "in: V rounding", "in: P rounding")}

# Full-length check (8192 tokens, every head): the decision's schemes.
FULL = {k: CANDIDATES[k] for k in ("bf16-flash", "fa3-fp8", "kernel", "kernel rot", "kernel hilo")}
FULL["lift: V bf16"] = LIFTS["lift: V bf16"]
FULL["lift: Q,K hilo"] = LIFTS["lift: Q,K hilo"]

DEFAULT_LABEL = "kernel"


def label_of():
    """spec -> label over every list (components are their own labels)."""
    m = {}
    for d in (CANDIDATES, LIFTS, ABLATION):
        for k, v in d.items():
            m.setdefault(v, k)
    for c in COMPONENTS:
        m[c] = c
    return m
