// Emission onto the optimized kernels of kernels/cpu (cpu_emit.cc). Each returns true when it
// emitted the node, false when the node is outside what those kernels cover (the caller then
// emits the reference kernel).
#pragma once

#include "kiln/ops/emit.h"

namespace kiln {

/// Conv (fused = false) and kiln.FusedConv (fused = true: activation, residual input 3).
Expected<bool> emitCpuConv(const Node& n, EmitContext& ctx, bool fused);
/// Gemm and kiln.FusedGemm.
Expected<bool> emitCpuGemm(const Node& n, EmitContext& ctx, bool fused);
/// MatMul and kiln.FusedMatMul (bias input 2, residual input 3).
Expected<bool> emitCpuMatMul(const Node& n, EmitContext& ctx, bool fused);

/// MaxPool (f32, 1-D or 2-D, no Indices output).
Expected<bool> emitCpuMaxPool(const Node& n, EmitContext& ctx);

}  // namespace kiln
