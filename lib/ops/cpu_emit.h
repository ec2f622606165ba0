// Emission onto the optimized kernels of kernels/cpu (cpu_emit.cc). Each returns true when it
// emitted the node, false when the node is outside what those kernels cover (the caller then
// emits the reference kernel).
#pragma once

#include "kiln/ops/emit.h"

namespace kiln {

/// Conv (fused = false) and kiln.FusedConv (fused = true: activation, residual input 3).
Expected<bool> emitCpuConv(const Node& n, EmitContext& ctx, bool fused);
/// kiln.NhwcConv: depthwise (kiln_cpu/conv_nhwc.h) or 1x1 stride-1 unpadded (a GEMM with the
/// weights as B, packed here).
Expected<bool> emitCpuNhwcConv(const Node& n, EmitContext& ctx);
/// kiln.NhwcExpandDw (f32, constant weights): kernels/cpu/conv_nhwc_fused.h.
Expected<bool> emitCpuNhwcExpandDw(const Node& n, EmitContext& ctx);
/// kiln.NhwcDwProject (f32, constant weights): kernels/cpu/conv_nhwc_fused.h.
Expected<bool> emitCpuNhwcDwProject(const Node& n, EmitContext& ctx);
/// Gemm and kiln.FusedGemm.
Expected<bool> emitCpuGemm(const Node& n, EmitContext& ctx, bool fused);
/// MatMul and kiln.FusedMatMul (bias input 2, residual input 3).
Expected<bool> emitCpuMatMul(const Node& n, EmitContext& ctx, bool fused);

/// ConvTranspose (f32, 1-D or 2-D, group 1, constant weights) with the begin pads resolved by
/// the caller (explicit, or from output_shape / auto_pad); fused: kiln.FusedConvTranspose
/// (activation, residual input 3).
Expected<bool> emitCpuConvTranspose(const Node& n, EmitContext& ctx,
                                    const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dilations,
                                    const std::vector<int64_t>& pads, bool fused);
/// MaxPool (f32, 1-D or 2-D, no Indices output).
Expected<bool> emitCpuMaxPool(const Node& n, EmitContext& ctx);
/// Softmax and LogSoftmax (f32) over the last axis: `rows` rows of `cols` values; inner is the
/// product of the dims after the axis (only 1 is taken).
/// kernels/cpu/attention.h's attention_scratch_floats for the target's tiles (per thread).
int64_t attentionScratchFloats(int64_t S, int64_t Skv, int64_t D, int64_t Dv, const Target& t);

Expected<bool> emitCpuSoftmax(const Node& n, EmitContext& ctx, int64_t rows, int64_t cols,
                              int64_t inner);
/// GlobalAveragePool (f32): the vectorized, threaded kernel of eltwise.h.
Expected<bool> emitCpuEltwise(const Node& n, EmitContext& ctx);
/// A standalone element-wise op (an activation or a unary math op, f32) through its vector
/// form (kernels/cpu/vfunctor.h, vector_emit.cc); false where it has none.
Expected<bool> emitCpuVectorUnary(const Node& n, EmitContext& ctx);
/// kiln.Elementwise with the fused `body` as one vector function; false where an op of the body
/// has no vector form or the broadcast does not collapse to three levels.
Expected<bool> emitCpuVectorChain(const Node& n, const Graph& body, EmitContext& ctx);
/// The vector form of element-wise node `n` applied to the vector expressions `args`; empty
/// where it has none.
std::string vectorCall(const Node& n, const std::vector<std::string>& args);
/// LayerNormalization (f32, scale and bias of `cols` values, f32 Mean/InvStdDev if any).
Expected<bool> emitCpuLayerNorm(const Node& n, EmitContext& ctx, int64_t rows, int64_t cols);

}  // namespace kiln
