// The lab's entry point to the study variants of the attention kernel (study_kernels.cu).
#pragma once
#include "fp8attn/fp8attn.h"

extern "C" fp8attn_status fp8attn_probe_attention_fwd(const fp8attn_fwd_params* params, void* stream);
