// Helpers shared by the emitters onto kernels/cpu (cpu_emit.cc, conv_emit.cc): the target's
// microkernel tiles, compile-time packing in the kernels' layouts, epilogue text, and the
// tunable choices of the GEMM driver (docs/tuning.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/cpu_kernel_table.h"
#include "kiln/ops/emit.h"

namespace kiln::cpu_detail {

/// The microkernel tiles of kernels/cpu/gemm.h for a target (kMR rows, kNR columns), from
/// kernels/cpu/manifest.json.
struct Tiles {
  int64_t mr, nr;
};
Tiles tilesFor(const Target& t);
/// gemm_pack_floats of kernels/cpu/gemm.h: one thread's B block for an N x K product.
int64_t packFloatsPerThread(int64_t N, int64_t K, const Tiles& t);
/// packed_a_floats of kernels/cpu/gemm.h.
int64_t packedAFloats(int64_t M, int64_t K, const Tiles& t);
/// pack_a of kernels/cpu/gemm.h.
void packA(const float* a, int64_t lda, int64_t M, int64_t K, const Tiles& t, float* dst);
/// pack_b_panels of kernels/cpu/gemm.h for B given as element (k, n) = b[k * sk + n * sn].
std::vector<float> packBPanels(const float* b, int64_t K, int64_t N, int64_t sk, int64_t sn,
                               const Tiles& t);
/// "<isa>_<mr>x<nr>", for kernel names.
std::string tileName(const Target& t);
/// The name of a call of kernel `k` (kernels/cpu/manifest.json) for the target:
/// "kiln_cpu::<name>" and the suffix the manifest gives it ("__avx512_12x32", "__avx2", none).
std::string cpuKernel(cpu_kernels::Kernel k, const Target& t);
/// A static_assert that the generated code's kiln_cpu tiles are the ones packed for.
std::string tileCheck(const Target& t);
/// A `float*` scratch expression of `floats` floats (nullptr for none).
std::string floatScratch(EmitContext& ctx, int64_t floats);
std::string nullFloat();
/// The activation functor of a fused node (NoActivation when !fused).
std::string activationOf(const Node& n, bool fused);
bool allF32(const Node& n);
void useCpuHeaders(EmitContext& ctx, const char* header);
/// The depthwise filter [C, 1, KH, KW] tap-major ([KH * KW, C]) as a derived weight:
/// kiln_cpu::depthwise_nhwc_pack_weights.
std::string depthwiseNhwcWeights(EmitContext& ctx, const float* w, int64_t C, int64_t taps);
/// kiln.NhwcConv's depthwise conv, s = [N, C, H, W, M, KH, KW, OH, OW, SH, SW, DH, DW, PH, PW,
/// group] (conv_nhwc_dw_emit.cc): act the epilogue's activation, residual its input or null.
void emitNhwcDepthwise(const Node& n, EmitContext& ctx, const std::vector<int64_t>& s,
                       const float* w, const std::string& act, const std::string& residual);
/// The GEMM driver plans --tune measures (kiln_cpu::GemmPlan) as choice words.
std::vector<std::string> gemmPlanChoices(int threads);
/// `kiln_cpu::GemmPlan{split}` for a choice's words ("rows", "cols").
std::string gemmPlanLiteral(const std::string& choice);
/// Candidates "ALGO" + " plan" for each algorithm and its plans.
std::vector<std::string> withPlans(const std::vector<std::string>& algos,
                                   const std::vector<std::vector<std::string>>& plans);
bool startsWith(const std::string& s, const std::string& prefix);
/// What an epilogue computes, for tuning keys (not where its operands live).
std::string epilogueKey(const Node& n, bool fused, bool bias, bool residual);
/// Whether kernels/cpu's GEMM driver keeps no partial sums in C (one k block: K <= kKC), so C
/// may be written over its residual; and the generated code's static_assert of it.
bool oneKBlock(int64_t K);
std::string oneKBlockCheck(int64_t K);
/// C[rows, N] = A[rows, K] (the node's input 0) * B (a compile-time constant, element (k, n) at
/// b[k * sk + n * sn]) packed here; rowA: A read in place by default, else packed at run time
/// (the other way a --tune candidate).
void emitPackedB(EmitContext& ctx, int64_t rows, int64_t N, int64_t K, const float* b, int64_t sk,
                 int64_t sn, const std::string& epi, const std::string& epiKey, bool rowA = false,
                 int residualInput = -1);

}  // namespace kiln::cpu_detail
