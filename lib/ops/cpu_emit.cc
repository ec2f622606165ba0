// Emission onto the optimized kernels of kernels/cpu (kiln_cpu): f32 Conv / FusedConv (2-D and
// 1-D; implicit GEMM or depthwise), Gemm / FusedGemm and MatMul / FusedMatMul. Constant
// operands are packed here, at compile time, into the microkernel's panel layout for the
// target's tiles. Cases the kernels do not cover return false and take the reference path.
#include "cpu_emit.h"
#include "cpu_emit_support.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cpu/amx_weights.h"
#include "emit_support.h"
#include "kiln/ops/fused.h"

namespace kiln {
namespace cpu_detail {

Tiles tilesFor(const Target& t) {
  const std::string isa = t.kernelIsa();
  for (const cpu_kernels::IsaTiles& i : cpu_kernels::kIsas)
    if (i.isa == isa) return {i.mr, i.nr};
  return {cpu_kernels::kIsas[0].mr, cpu_kernels::kIsas[0].nr};  // every kernelIsa() is listed
}

/// gemm_pack_floats of kernels/cpu/gemm.h: one thread's B block for an N x K product.
int64_t packFloatsPerThread(int64_t N, int64_t K, const Tiles& t) {
  const int64_t kKC = cpu_kernels::kKC, kNC = 8 * t.nr;
  const int64_t kc = std::min(K, kKC), nc = std::min((N + t.nr - 1) / t.nr * t.nr, kNC);
  return (kc * nc + 15) / 16 * 16;
}

int64_t packedAFloats(int64_t M, int64_t K, const Tiles& t) {
  return ((M + t.mr - 1) / t.mr * t.mr * K + 15) / 16 * 16;
}

/// pack_a of kernels/cpu/gemm.h: strips of mr rows, zero past M, k-block major (the layout of
/// its packed_a_index: rows [k0, k0 + kc) of every strip, strip after strip, then the next block).
void packA(const float* a, int64_t lda, int64_t M, int64_t K, const Tiles& t, float* dst) {
  const int64_t kKC = cpu_kernels::kKC, mpad = (M + t.mr - 1) / t.mr * t.mr;
  for (int64_t s = 0; s * t.mr < M; ++s)
    for (int64_t r = 0; r < t.mr; ++r) {
      const int64_t m = s * t.mr + r;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t k0 = k / kKC * kKC, kc = std::min(kKC, K - k0);
        dst[k0 * mpad + (s * kc + k - k0) * t.mr + r] = m < M ? a[m * lda + k] : 0.0f;
      }
    }
}

/// pack_b_panels of kernels/cpu/gemm.h for B given as element (k, n) = b[k * sk + n * sn].
std::vector<float> packBPanels(const float* b, int64_t K, int64_t N, int64_t sk, int64_t sn,
                               const Tiles& t) {
  const int64_t panels = (N + t.nr - 1) / t.nr;
  std::vector<float> out(size_t(panels * t.nr * K), 0.0f);
  for (int64_t j = 0; j < panels; ++j)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < t.nr && j * t.nr + c < N; ++c)
        out[size_t((j * K + k) * t.nr + c)] = b[k * sk + (j * t.nr + c) * sn];
  return out;
}

std::string tileName(const Target& t) {
  Tiles tl = tilesFor(t);
  return fmt::format("{}_{}x{}", t.kernelIsa(), tl.mr, tl.nr);
}

std::string cpuKernel(cpu_kernels::Kernel k, const Target& t) {
  const cpu_kernels::KernelInfo& info = cpu_kernels::kKernels[size_t(k)];
  const std::string name = "kiln_cpu::" + std::string(info.name);
  switch (info.suffix) {
    case cpu_kernels::Suffix::kTile:
      return name + "__" + tileName(t);
    case cpu_kernels::Suffix::kIsa:
      return name + "__" + t.kernelIsa();
    case cpu_kernels::Suffix::kNone:
      break;
  }
  return name;
}

/// The generated code must agree with the tiles the compiler packed for.
std::string tileCheck(const Target& t) {
  Tiles tl = tilesFor(t);
  return fmt::format(
      "static_assert(kiln_cpu::kMR == {} && kiln_cpu::kNR == {}, \"kiln: weights packed for "
      "other tiles than this compiler's target\");\n",
      tl.mr, tl.nr);
}

std::string floatScratch(EmitContext& ctx, int64_t floats) {
  if (floats <= 0) return "static_cast<float*>(nullptr)";
  return fmt::format("reinterpret_cast<float*>({})", ctx.scratch(floats * 4));
}

std::string nullFloat() {
  return "static_cast<const float*>(nullptr)";
}

std::string activationOf(const Node& n, bool fused) {
  return fused ? activationFunctorFor(n.attrString(kActivationAttr, ""), n, "activation_")
               : "kiln_ref::NoActivation{}";
}

bool allF32(const Node& n) {
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.input(i) && n.input(i)->dtype() != DType::F32) return false;
  return n.output(0)->dtype() == DType::F32;
}

void useCpuHeaders(EmitContext& ctx, const char* header) {
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader(header);
}

/// The GEMM driver plans --tune measures (kiln_cpu::GemmPlan), as choice words: the cost
/// model's split (""), and with threads, the work split over rows or over columns only. All
/// compute the same sums (bit-identical results).
std::vector<std::string> gemmPlanChoices(int threads) {
  std::vector<std::string> c = {""};
  if (threads > 1) {
    c.push_back("rows");
    c.push_back("cols");
  }
  return c;
}

/// `kiln_cpu::GemmPlan{split}` for a choice's words ("rows", "cols").
std::string gemmPlanLiteral(const std::string& choice) {
  int split = 0;
  std::string word;
  std::istringstream words(choice);
  while (words >> word) {
    if (word == "rows") split = 1;
    if (word == "cols") split = 2;
  }
  return fmt::format("kiln_cpu::GemmPlan{{{}}}", split);
}

/// Candidates "ALGO" + " plan" for each algorithm and plan.
std::vector<std::string> withPlans(const std::vector<std::string>& algos,
                                   const std::vector<std::vector<std::string>>& plans) {
  std::vector<std::string> out;
  for (size_t a = 0; a < algos.size(); ++a)
    for (const auto& plan : plans[a])
      out.push_back(plan.empty() ? algos[a] : algos[a] + " " + plan);
  return out;
}

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// What an epilogue computes, for tuning keys (not where its operands live).
std::string epilogueKey(const Node& n, bool fused, bool bias, bool residual) {
  std::string act = fused ? n.attrString(kActivationAttr, "") : "";
  return fmt::format("act={}{}{}", act.empty() ? "none" : act, bias ? " bias" : "",
                     residual ? " residual" : "");
}

/// Rows up to which a product with a constant B is a GEMV (kiln_cpu::kGemvMaxRows of
/// kernels/cpu/gemv.h): a classifier's fully connected layer at batch 1.
constexpr int64_t kGemvMaxRows = 4;

bool oneKBlock(int64_t K) {
  return K <= cpu_kernels::kKC;
}

std::string oneKBlockCheck(int64_t K) {
  return fmt::format(
      "static_assert({} <= kiln_cpu::kKC, \"kiln and kiln_cpu disagree on the GEMM's k blocks\"); ",
      K);
}

/// C[rows, N] = A[rows, K] (the node's input 0, row-major) * B, with B (element (k, n) at
/// b[k * sk + n * sn], a compile-time constant) packed into the target's panels here. rowA: A
/// is read in place (kiln_cpu::gemm_f32_rowa_packed_b), else packed at run time.
void emitPackedB(EmitContext& ctx, int64_t rows, int64_t N, int64_t K, const float* b, int64_t sk,
                 int64_t sn, const std::string& epi, const std::string& epiKey, bool rowA,
                 int residualInput) {
  const Target& target = ctx.target();
  const Tiles tiles = tilesFor(target);
  // The tunable: the driver's plan, and whether A is read in place or packed.
  // With few rows the GEMV kernel comes first: it streams B at about memory bandwidth where
  // the driver, built for 12-row tiles, reaches about half (kiln_kernels_bench, 1 thread, B from
  // memory, 1x1000x1280: 30-39 vs 17-19 GB/s; 4 rows 26-29 vs 16-19). It sums as the driver
  // does (bit-identical) and splits work over columns only, so it has no plans.
  std::vector<std::string> algos;
  std::vector<std::vector<std::string>> plans;
  if (rows <= kGemvMaxRows) {
    algos.push_back("gemv");
    plans.push_back({""});
  }
  // Reading A in place by default on AVX2 for Gemm/MatMul (balanced strips, no packing) was
  // tried: 1.5-3.5% faster in a kernel harness, but the BERT-like encoder 5% slower at 1 thread
  // (kiln bench --versus, 16 rounds, a Zen 3); it stays a --tune candidate.
  // On AMX tiles in bf16 pieces where the target has them (Target::amxF32; conv_emit.cc's
  // "amx"), for finite weights: MobileNetV2's channels-last 1x1 convs and BERT's MatMuls.
  bool finite = target.amxF32 && target.amxPieces > 0;
  for (int64_t k = 0; finite && k < K; ++k)
    for (int64_t n = 0; finite && n < N; ++n) finite = std::isfinite(b[k * sk + n * sn]);
  if (finite) {
    algos.push_back("amx");
    plans.push_back({""});
  }
  algos.push_back(rowA ? "rowa" : "packa");
  algos.push_back(rowA ? "packa" : "rowa");
  plans.resize(algos.size(), gemmPlanChoices(ctx.threads()));
  const std::string choice = ctx.tuned(fmt::format("gemm_packed_b {}x{}x{} {}", rows, N, K, epiKey),
                                       withPlans(algos, plans));
  if (choice == "amx") {
    // B's bf16 pieces as AMX B tiles (kiln_cpu::amx_pack_b); A's, a group of 32-row blocks at
    // a time, in scratch (kiln_cpu::gemm_amx_scratch_bytes).
    const int np = target.amxPieces;
    std::vector<uint16_t> packed(size_t(kiln_cpu::amx_packed_b_bytes(K, N, np) / 2));
    kiln_cpu::amx_pack_b(b, K, N, sk, sn, np, packed.data());
    std::string bp =
        ctx.derivedWeight(Tensor::fromVector(DType::BF16, {int64_t(packed.size())}, packed));
    const int64_t bytes = kiln_cpu::amx_scratch_bytes(K, rows, N, ctx.threads(), np);
    const std::string out =
        residualInput >= 0 ? ctx.outputOverInput(0, size_t(residualInput)) : ctx.output(0);
    ctx.useHeader("kiln_cpu/gemm_amx.h");
    ctx.call(
        cpuKernel(cpu_kernels::Kernel::gemm_amx_f32, target),
        fmt::format("static_assert(kiln_cpu::gemm_amx_scratch_bytes({0}, {1}, {2}, {10}, {9}) == "
                    "{11}, \"kiln and kiln_cpu disagree on the AMX GEMM\"); "
                    "kiln_cpu::gemm_amx_f32<{9}>({0}, {1}, {2}, {3}, {2}, reinterpret_cast<const "
                    "uint16_t*>({4}), {5}, {1}, {6}, {7}, {8}, {10});",
                    rows, N, K, ctx.input(0), bp, out, epi, floatScratch(ctx, bytes / 4),
                    ctx.threadPool(), np, ctx.threads(), bytes));
    return;
  }
  rowA = startsWith(choice, "rowa");
  const std::string plan = gemmPlanLiteral(choice);
  std::vector<float> panels = packBPanels(b, K, N, sk, sn, tiles);
  std::string bp =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(panels.size())}, panels));
  if (choice == "gemv") {
    ctx.useHeader("kiln_cpu/gemv.h");
    ctx.call(
        cpuKernel(cpu_kernels::Kernel::gemv_f32_packed_b, target),
        tileCheck(target) +
            fmt::format("kiln_cpu::gemv_f32_packed_b({}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                        rows, N, K, ctx.input(0), K, bp, ctx.output(0), N, epi, ctx.threadPool()));
    return;
  }
  // The output over the residual's buffer where nothing later reads it, with one k block (past
  // it, earlier blocks' sums wait in C): see emitCpuConv.
  const bool over = residualInput >= 0 && oneKBlock(K);
  const std::string out = over ? ctx.outputOverInput(0, size_t(residualInput)) : ctx.output(0);
  const std::string check = tileCheck(target) + (over ? oneKBlockCheck(K) : std::string());
  if (rowA) {
    ctx.call(
        cpuKernel(cpu_kernels::Kernel::gemm_f32_rowa_packed_b, target),
        check + fmt::format("kiln_cpu::gemm_f32_rowa_packed_b({}, {}, {}, {}, {}, {}, {}, {}, "
                            "{}, {}, {});",
                            rows, N, K, ctx.input(0), K, bp, out, N, epi, ctx.threadPool(), plan));
    return;
  }
  std::string scratch = floatScratch(ctx, packedAFloats(rows, K, tiles));
  ctx.call(cpuKernel(cpu_kernels::Kernel::gemm_f32_packed_b, target),
           check + fmt::format("kiln_cpu::gemm_f32_packed_b({}, {}, {}, {}, {}, {}, {}, {}, {}, "
                               "{}, {}, {});",
                               rows, N, K, ctx.input(0), K, bp, out, N, epi, scratch,
                               ctx.threadPool(), plan));
}

}  // namespace cpu_detail

using namespace cpu_detail;

Expected<bool> emitCpuGemm(const Node& n, EmitContext& ctx, bool fused) {
  const Target& target = ctx.target();
  if (!target.optimizedKernels() || !allF32(n)) return false;
  if (n.attrInt("transA", 0) != 0 || n.attrFloat("alpha", 1.0f) != 1.0f) return false;
  auto a = n.input(0)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  const bool transB = n.attrInt("transB", 0) != 0;
  const int64_t M = y[0], N = y[1], K = a[1];
  if (M <= 0 || N <= 0 || K <= 0) return false;
  const bool hasResidual = fused && n.numInputs() > 3 && n.input(3);
  std::string rowBias = nullFloat(), colBias = nullFloat(), residual = nullFloat();
  int residualInput = -1;  // the node's input the residual is
  if (n.input(2) && n.attrFloat("beta", 1.0f) != 0.0f) {
    if (n.attrFloat("beta", 1.0f) != 1.0f) return false;
    auto c = n.input(2)->shape().staticDims();
    std::vector<int64_t> c2(2, 1);
    for (size_t i = 0; i < c.size() && i < 2; ++i) c2[2 - c.size() + i] = c[i];
    if (c2[0] == 1 && c2[1] == N && N != 1) {
      colBias = ctx.input(2);
    } else if (c2[0] == M && c2[1] == 1 && M != 1) {
      rowBias = ctx.input(2);
    } else if (c2[0] == M && c2[1] == N && !hasResidual) {
      residual = ctx.input(2);  // C then nothing else: the same sum order as the reference
      residualInput = 2;
    } else {
      return false;
    }
  }
  if (hasResidual) {
    residual = ctx.input(3);
    residualInput = 3;
  }
  std::string epi = fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, {})",
                                activationOf(n, fused), rowBias, colBias, residual, N);
  const Tiles tiles = tilesFor(target);
  useCpuHeaders(ctx, "kiln_cpu/gemm.h");
  if (const Tensor* bt = ctx.value(1)) {
    // B is [K, N], or [N, K] with transB.
    emitPackedB(ctx, M, N, K, bt->data<float>(), transB ? 1 : N, transB ? K : 1, epi,
                epilogueKey(n, fused, rowBias != nullFloat() || colBias != nullFloat(),
                            residual != nullFloat()),
                false, residualInput);
    return true;
  }
  if (transB) return false;
  std::string scratch = floatScratch(
      ctx, packedAFloats(M, K, tiles) + packFloatsPerThread(N, K, tiles) * ctx.threads());
  ctx.call(cpuKernel(cpu_kernels::Kernel::gemm_f32, target),
           fmt::format("kiln_cpu::gemm_f32({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});", M, N,
                       K, ctx.input(0), K, ctx.input(1), N, ctx.output(0), N, epi, scratch,
                       ctx.threadPool()));
  return true;
}

Expected<bool> emitCpuMatMul(const Node& n, EmitContext& ctx, bool fused) {
  const Target& target = ctx.target();
  if (!target.optimizedKernels() || !allF32(n)) return false;
  auto ad = n.input(0)->shape().staticDims();
  auto bd = n.input(1)->shape().staticDims();
  if (ad.empty() || bd.empty()) return false;
  BatchedMatMul g = batchedMatMulOf(ad, bd);
  const int64_t M = g.M, N = g.N, K = g.K;
  if (M <= 0 || N <= 0 || K <= 0) return false;
  std::string colBias = fused && n.input(2) ? ctx.input(2) : nullFloat();
  std::string residual = fused && n.numInputs() > 3 && n.input(3) ? ctx.input(3) : nullFloat();
  std::string act = activationOf(n, fused);
  const Tiles tiles = tilesFor(target);
  useCpuHeaders(ctx, "kiln_cpu/gemm.h");
  // A constant 2-D B: every batch of A shares it, and a contiguous A is one tall GEMM.
  const Tensor* bt = ctx.value(1);
  if (bt && bd.size() == 2) {
    int64_t rows = M;
    for (int64_t d : g.batch) rows *= d;
    emitPackedB(ctx, rows, N, K, bt->data<float>(), N, 1,
                fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, {})", act, nullFloat(),
                            colBias, residual, N),
                epilogueKey(n, fused, colBias != nullFloat(), residual != nullFloat()), false,
                residual != nullFloat() ? 3 : -1);
    return true;
  }
  std::string epi = fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, {})", act, nullFloat(),
                                colBias, residual, N);
  std::string scratch = floatScratch(
      ctx, packedAFloats(M, K, tiles) + packFloatsPerThread(N, K, tiles) * ctx.threads());
  ctx.call(cpuKernel(cpu_kernels::Kernel::matmul_f32, target),
           fmt::format("kiln_cpu::matmul_f32({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                       g.batch.size(), ctx.constArray(g.batch), ctx.constArray(g.aStrides),
                       ctx.constArray(g.bStrides), M, N, K, ctx.input(0), ctx.input(1),
                       ctx.output(0), epi, scratch, ctx.threadPool()));
  return true;
}

Expected<bool> emitCpuConvTranspose(const Node& n, EmitContext& ctx,
                                    const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dilations,
                                    const std::vector<int64_t>& pads, bool fused) {
  const Target& target = ctx.target();
  if (!target.optimizedKernels() || !allF32(n) || n.attrInt("group", 1) != 1) return false;
  const Tensor* wt = ctx.value(1);
  if (!wt) return false;
  auto x = n.input(0)->shape().staticDims();
  auto wd = n.input(1)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  if (x.size() != 3 && x.size() != 4) return false;
  for (const auto* dims : {&x, &wd, &y})
    for (int64_t d : *dims)
      if (d <= 0) return false;
  const bool two = x.size() == 4;
  const size_t r = x.size() - 2;
  const int64_t C = x[1], M = y[1], KH = two ? wd[2] : 1, KW = wd[r + 1];
  if (wd[0] != C || wd[1] != M) return false;
  std::vector<int64_t> s = {x[0],
                            C,
                            two ? x[2] : 1,
                            x[r + 1],
                            M,
                            KH,
                            KW,
                            two ? y[2] : 1,
                            y[r + 1],
                            two ? strides[0] : 1,
                            strides[r - 1],
                            two ? dilations[0] : 1,
                            dilations[r - 1],
                            two ? pads[0] : 0,
                            pads[r - 1],
                            1};
  // A = the [M*KH*KW, C] transpose of w [C, M, KH, KW], packed for the target's tiles.
  const Tiles tiles = tilesFor(target);
  const int64_t Mk = M * KH * KW;
  std::vector<float> transposed(size_t(Mk * C));
  const float* w = wt->data<float>();
  for (int64_t row = 0; row < Mk; ++row)
    for (int64_t c = 0; c < C; ++c) transposed[size_t(row * C + c)] = w[c * Mk + row];
  std::vector<float> packed(size_t(packedAFloats(Mk, C, tiles)), 0.0f);
  packA(transposed.data(), C, Mk, C, tiles, packed.data());
  std::string wp =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(packed.size())}, packed));
  const int64_t hw = s[2] * s[3], block = std::min<int64_t>(hw, 256);
  // kiln_cpu::conv_transpose2d_scratch_floats: a column block and a B block per thread.
  std::string scratch = floatScratch(
      ctx, ((Mk * block + 15) / 16 * 16 + packFloatsPerThread(block, C, tiles)) * ctx.threads());
  useCpuHeaders(ctx, "kiln_cpu/conv.h");
  ctx.call(
      cpuKernel(cpu_kernels::Kernel::conv_transpose2d_f32, target),
      tileCheck(target) +
          fmt::format("kiln_cpu::conv_transpose2d_f32(kiln_cpu::Conv2dShape{{{}}}, {}, {}, "
                      "{}, {}, kiln_cpu::make_epilogue({}, {}, {}, {}, 0), {}, {});",
                      fmt::join(s, ", "), ctx.input(0), wp, n.input(2) ? ctx.input(2) : nullFloat(),
                      ctx.output(0), activationOf(n, fused), nullFloat(), nullFloat(),
                      fused && n.numInputs() > 3 && n.input(3) ? ctx.input(3) : nullFloat(),
                      scratch, ctx.threadPool()));
  return true;
}

Expected<bool> emitCpuMaxPool(const Node& n, EmitContext& ctx) {
  if (!ctx.target().optimizedKernels() || !allF32(n)) return false;
  if (n.numOutputs() > 1 && n.output(1)) return false;  // Indices: the reference kernel
  auto x = n.input(0)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  if (x.size() != 3 && x.size() != 4) return false;
  for (const auto* dims : {&x, &y})
    for (int64_t d : *dims)
      if (d <= 0) return false;
  SlidingWindow w = slidingWindowOf(n, n.attrInts("kernel_shape"));
  if (!w.valid()) return false;
  const bool two = x.size() == 4;
  const size_t r = x.size() - 2;
  std::vector<int64_t> s = {
      x[0] * x[1],      two ? x[2] : 1,           x[r + 1],           two ? w.kernel[0] : 1,
      w.kernel[r - 1],  two ? y[2] : 1,           y[r + 1],           two ? w.strides[0] : 1,
      w.strides[r - 1], two ? w.dilations[0] : 1, w.dilations[r - 1], two ? w.pads[0] : 0,
      w.pads[r - 1]};
  ctx.useHeader("kiln_cpu/pool.h");
  ctx.call(cpuKernel(cpu_kernels::Kernel::max_pool2d_f32, ctx.target()),
           fmt::format("kiln_cpu::max_pool2d_f32(kiln_cpu::Pool2dShape{{{}}}, {}, {}, {});",
                       fmt::join(s, ", "), ctx.input(0), ctx.output(0), ctx.threadPool()));
  return true;
}

}  // namespace kiln

namespace kiln {

int64_t attentionScratchFloats(int64_t S, int64_t Skv, int64_t D, int64_t Dv, const Target& t) {
  const Tiles tiles = tilesFor(t);
  auto gemm = [&](int64_t M, int64_t N, int64_t K) {
    return packedAFloats(M, K, tiles) + packFloatsPerThread(N, K, tiles);
  };
  return (S * D + 15) / 16 * 16 + (S * Skv + 15) / 16 * 16 +
         std::max(gemm(S, Skv, D), gemm(S, Dv, Skv));
}

Expected<bool> emitCpuSoftmax(const Node& n, EmitContext& ctx, int64_t rows, int64_t cols,
                              int64_t inner) {
  if (!ctx.target().optimizedKernels() || !allF32(n) || inner != 1 || cols <= 0) return false;
  if (n.opType() != "Softmax" && n.opType() != "LogSoftmax") return false;
  ctx.useHeader("kiln_cpu/rowwise.h");
  ctx.call(cpuKernel(cpu_kernels::Kernel::softmax_rows_f32, ctx.target()),
           fmt::format("kiln_cpu::softmax_rows_f32({}, {}, {}, {}, {}, {});", rows, cols,
                       ctx.input(0), ctx.output(0), n.opType() == "LogSoftmax", ctx.threadPool()));
  return true;
}

Expected<bool> emitCpuLayerNorm(const Node& n, EmitContext& ctx, int64_t rows, int64_t cols) {
  if (!ctx.target().optimizedKernels() || !allF32(n)) return false;
  for (size_t i = 1; i < n.numOutputs(); ++i)
    if (n.output(i) && n.output(i)->dtype() != DType::F32) return false;
  auto opt = [&](size_t i) {
    return n.numOutputs() > i && n.output(i) ? ctx.output(i)
                                             : std::string("static_cast<float*>(nullptr)");
  };
  ctx.useHeader("kiln_cpu/rowwise.h");
  ctx.call(
      cpuKernel(cpu_kernels::Kernel::layer_norm_rows_f32, ctx.target()),
      fmt::format("kiln_cpu::layer_norm_rows_f32({}, {}, {}, {}, {}, {}, {}, {}, {}, {});", rows,
                  cols, ctx.input(0), ctx.input(1),
                  n.input(2) ? ctx.input(2) : std::string("static_cast<const float*>(nullptr)"),
                  floatLiteral(n.attrFloat("epsilon", 1e-5f)), ctx.output(0), opt(1), opt(2),
                  ctx.threadPool()));
  return true;
}

Expected<bool> emitCpuEltwise(const Node& n, EmitContext& ctx) {
  if (!ctx.target().optimizedKernels() || !allF32(n)) return false;
  const auto x = n.input(0)->shape().staticDims();
  int64_t count = 1;
  for (int64_t d : x) count *= d;
  if (count == 0) return false;
  if (n.opType() == "GlobalAveragePool" && x.size() >= 2) {
    const int64_t planes = x[0] * x[1];
    ctx.useHeader("kiln_cpu/eltwise.h");
    ctx.call(cpuKernel(cpu_kernels::Kernel::global_average_pool_f32, ctx.target()),
             fmt::format("kiln_cpu::global_average_pool_f32({}, {}, {}, {}, {});", planes,
                         count / planes, ctx.input(0), ctx.output(0), ctx.threadPool()));
    return true;
  }
  return false;
}

}  // namespace kiln
