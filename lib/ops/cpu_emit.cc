// Emission onto the optimized kernels of kernels/cpu (kiln_cpu): f32 Conv / FusedConv (2-D and
// 1-D; implicit GEMM or depthwise), Gemm / FusedGemm and MatMul / FusedMatMul. Constant
// operands are packed here, at compile time, into the microkernel's panel layout for the
// target's tiles. Cases the kernels do not cover return false and take the reference path.
#include "cpu_emit.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "emit_support.h"
#include "kiln/ops/fused.h"

namespace kiln {
namespace {

/// The microkernel tiles of kernels/cpu/gemm.h for a target (kMR rows, kNR columns).
struct Tiles {
  int64_t mr, nr;
};
Tiles tilesFor(const Target& t) {
  switch (t.isa) {
    case Isa::Avx512:
      return {12, 32};
    case Isa::Avx2:
      return {6, 16};
    default:
      return {4, 8};
  }
}

/// gemm_pack_floats of kernels/cpu/gemm.h: one thread's B block for an N x K product.
int64_t packFloatsPerThread(int64_t N, int64_t K, const Tiles& t) {
  const int64_t kKC = 256, kNC = 8 * t.nr;
  const int64_t kc = std::min(K, kKC), nc = std::min((N + t.nr - 1) / t.nr * t.nr, kNC);
  return (kc * nc + 15) / 16 * 16;
}

int64_t packedAFloats(int64_t M, int64_t K, const Tiles& t) {
  return ((M + t.mr - 1) / t.mr * t.mr * K + 15) / 16 * 16;
}

/// pack_a of kernels/cpu/gemm.h: strips of mr rows, zero past M, k-block major (the layout of
/// its packed_a_index: rows [k0, k0 + kc) of every strip, strip after strip, then the next block).
void packA(const float* a, int64_t lda, int64_t M, int64_t K, const Tiles& t, float* dst) {
  const int64_t kKC = 256, mpad = (M + t.mr - 1) / t.mr * t.mr;
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
/// model's (""), L2 blocks of 8 or 32 strips of A instead of 16, and with threads, the work split
/// over rows or over columns only. All compute the same sums (bit-identical results).
std::vector<std::string> gemmPlanChoices(int threads, bool blocking = true) {
  std::vector<std::string> c = {""};
  if (blocking) {
    c.push_back("mc=8");
    c.push_back("mc=32");
  }
  if (threads > 1) {
    c.push_back("rows");
    c.push_back("cols");
  }
  return c;
}

/// `kiln_cpu::GemmPlan{split, mc_strips}` for a choice's words ("rows", "cols", "mc=N").
std::string gemmPlanLiteral(const std::string& choice) {
  int split = 0, mc = 0;
  std::string word;
  std::istringstream words(choice);
  while (words >> word) {
    if (word == "rows") split = 1;
    if (word == "cols") split = 2;
    if (word.rfind("mc=", 0) == 0) mc = std::atoi(word.c_str() + 3);
  }
  return fmt::format("kiln_cpu::GemmPlan{{{}, {}}}", split, mc);
}

/// Candidates "ALGO" + " plan" for each algorithm and plan.
std::vector<std::string> withPlans(const std::vector<std::string>& algos,
                                   const std::vector<std::vector<std::string>>& plans) {
  std::vector<std::string> out;
  for (size_t a = 0; a < algos.size(); ++a)
    for (const auto& plan : plans[a]) out.push_back(plan.empty() ? algos[a] : algos[a] + " " + plan);
  return out;
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

/// What an epilogue computes, for tuning keys (not where its operands live).
std::string epilogueKey(const Node& n, bool fused, bool bias, bool residual) {
  std::string act = fused ? n.attrString(kActivationAttr, "") : "";
  return fmt::format("act={}{}{}", act.empty() ? "none" : act, bias ? " bias" : "",
                     residual ? " residual" : "");
}

/// C[rows, N] = A[rows, K] (the node's input 0, row-major) * B, with B (element (k, n) at
/// b[k * sk + n * sn], a compile-time constant) packed into the target's panels here. rowA: A
/// is read in place (kiln_cpu::gemm_f32_rowa_packed_b), else packed at run time.
void emitPackedB(EmitContext& ctx, int64_t rows, int64_t N, int64_t K, const float* b, int64_t sk,
                 int64_t sn, const std::string& epi, const std::string& epiKey, bool rowA = false) {
  const Target& target = ctx.target();
  const Tiles tiles = tilesFor(target);
  // The tunable: the driver's plan; with A read in place, packing it instead is a candidate.
  std::vector<std::string> algos = {rowA ? "rowa" : "packa"};
  if (rowA) algos.push_back("packa");
  const std::string choice =
      ctx.tuned(fmt::format("gemm_packed_b {}x{}x{} {}", rows, N, K, epiKey),
                withPlans(algos, std::vector<std::vector<std::string>>(
                                     algos.size(), gemmPlanChoices(ctx.threads()))));
  rowA = startsWith(choice, "rowa");
  const std::string plan = gemmPlanLiteral(choice);
  std::vector<float> panels = packBPanels(b, K, N, sk, sn, tiles);
  std::string bp =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(panels.size())}, panels));
  if (rowA) {
    ctx.call("kiln_cpu::gemm_f32_rowa_packed_b__" + tileName(target),
             tileCheck(target) +
                 fmt::format("kiln_cpu::gemm_f32_rowa_packed_b({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                             rows, N, K, ctx.input(0), K, bp, ctx.output(0), N, epi,
                             ctx.threadPool(), plan));
    return;
  }
  std::string scratch = floatScratch(ctx, packedAFloats(rows, K, tiles));
  ctx.call("kiln_cpu::gemm_f32_packed_b__" + tileName(target),
           tileCheck(target) +
               fmt::format(
                   "kiln_cpu::gemm_f32_packed_b({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                   rows, N, K, ctx.input(0), K, bp, ctx.output(0), N, epi, scratch,
                   ctx.threadPool(), plan));
}

/// The direct conv's budget for one band of phase planes (floats, 1 MiB: about an L2 cache);
/// a conv whose one-row band does not fit takes the im2col path.
constexpr int64_t kDirectConvMaxPlaneFloats = int64_t(1) << 18;

/// kiln_cpu::conv_direct_detail::planes_for_band(s, rows).floats for s = [N, C, H, W, M, KH, KW,
/// OH, OW, SH, SW, DH, DW, PH, PW, group]: a band's phase planes of one group, then nr zeros.
int64_t directConvPlaneFloats(const std::vector<int64_t>& s, int64_t rows, int64_t nr) {
  const int64_t needH = (rows - 1) * s[9] + (s[5] - 1) * s[11] + 1;
  const int64_t needW = (s[8] - 1) * s[10] + (s[6] - 1) * s[12] + 1;
  const int64_t Hq = (needH + s[9] - 1) / s[9], Wq = (needW + s[10] - 1) / s[10];
  return ((s[1] / s[15]) * s[9] * s[10] * Hq * Wq + nr + 15) / 16 * 16;
}

/// The planes part of kiln_cpu::conv2d_direct_scratch_floats: the tallest band that fits the
/// budget (conv_direct_detail::planes_of), once per thread when it is shorter than the output.
int64_t directConvPlanesScratch(const std::vector<int64_t>& s, int64_t nr, int threads) {
  int64_t rows = s[7];
  while (rows > 1 && directConvPlaneFloats(s, rows, nr) > kDirectConvMaxPlaneFloats) --rows;
  return directConvPlaneFloats(s, rows, nr) * (rows < s[7] ? threads : 1);
}

/// kiln_cpu::conv2d_direct_applies: more than one tap and at most 64, begin pads inside the
/// kernel's extent, planes within the budget.
bool directConvApplies(const std::vector<int64_t>& s, int64_t nr) {
  const int64_t taps = s[5] * s[6];
  return taps > 1 && taps <= 64 && s[13] <= (s[5] - 1) * s[11] && s[14] <= (s[6] - 1) * s[12] &&
         directConvPlaneFloats(s, 1, nr) <= kDirectConvMaxPlaneFloats;
}

}  // namespace

Expected<bool> emitCpuConv(const Node& n, EmitContext& ctx, bool fused) {
  const Target& target = ctx.target();
  if (!target.optimizedKernels() || !allF32(n)) return false;
  const Tensor* wt = ctx.value(1);
  if (!wt) return false;  // run-time weights: the reference kernel
  auto x = n.input(0)->shape().staticDims();
  auto wd = n.input(1)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  if (x.size() < 3 || x.size() != wd.size() || y.size() != x.size()) return false;
  const size_t rank = x.size() - 2;
  if (rank != 1 && rank != 2) return false;
  for (const auto* dims : {&x, &wd, &y})
    for (int64_t d : *dims)
      if (d <= 0) return false;  // empty tensors: the reference kernel
  SlidingWindow w = slidingWindowOf(n, std::vector<int64_t>(wd.begin() + 2, wd.end()));
  if (!w.valid()) return false;
  const int64_t group = n.attrInt("group", 1);
  if (group <= 0 || x[1] % group != 0 || wd[0] % group != 0) return false;
  // [N, C, H, W, M, KH, KW, OH, OW, SH, SW, DH, DW, PH, PW, group]; 1-D as H = 1.
  const bool two = rank == 2;
  std::vector<int64_t> s = {x[0],
                            x[1],
                            two ? x[2] : 1,
                            two ? x[3] : x[2],
                            wd[0],
                            two ? wd[2] : 1,
                            two ? wd[3] : wd[2],
                            two ? y[2] : 1,
                            two ? y[3] : y[2],
                            two ? w.strides[0] : 1,
                            w.strides[rank - 1],
                            two ? w.dilations[0] : 1,
                            w.dilations[rank - 1],
                            two ? w.pads[0] : 0,
                            w.pads[rank - 1],
                            group};
  std::string shape = fmt::format("kiln_cpu::Conv2dShape{{{}}}", fmt::join(s, ", "));
  std::string act = activationOf(n, fused);
  std::string residual = fused && n.numInputs() > 3 && n.input(3) ? ctx.input(3) : nullFloat();
  std::string epi = fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, 0)", act, nullFloat(),
                                nullFloat(), residual);
  std::string bias = n.input(2) ? ctx.input(2) : nullFloat();
  const bool depthwise = group == x[1] && group == wd[0];
  if (depthwise) {
    // Scratch per thread: kiln_cpu::depthwise_scratch_floats, which the kernel checks (plain
    // loops run if this estimate were short): the padded input's phase planes and the flat
    // outputs, each rounded up (64 floats of output, 16 of planes).
    const int64_t SH = s[9], SW = s[10];
    const int64_t Hp = std::max((s[7] - 1) * SH + (s[5] - 1) * s[11] + 1, s[2] + s[13]);
    const int64_t Wp = std::max((s[8] - 1) * SW + (s[6] - 1) * s[12] + 1, s[3] + s[14]);
    const int64_t Hq = (Hp + SH - 1) / SH, Wq = (Wp + SW - 1) / SW;
    const int64_t flat = (s[7] * Wq + 63) / 64 * 64;
    const int64_t per = (SH * SW * Hq * Wq + flat + 15) / 16 * 16 + flat;
    useCpuHeaders(ctx, "kiln_cpu/conv.h");
    ctx.call("kiln_cpu::depthwise_conv2d_f32__" + target.kernelIsa(),
             fmt::format("static_assert(kiln_cpu::depthwise_scratch_floats({0}) == {7}, \"kiln "
                         "and kiln_cpu disagree on the depthwise scratch\"); "
                         "kiln_cpu::depthwise_conv2d_f32({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
                         "{8});",
                         shape, ctx.input(0), ctx.input(1), bias, ctx.output(0), epi,
                         floatScratch(ctx, per * ctx.threads()), per, ctx.threadPool()));
    return true;
  }
  // Weights packed per group for the target's tiles.
  const Tiles tiles = tilesFor(target);
  const int64_t Mg = wd[0] / group, K = wt->numElements() / wd[0];
  const int64_t perGroup = packedAFloats(Mg, K, tiles);
  const float* wsrc = wt->data<float>();
  // Tunable: the direct conv (where it applies; the cost model's pick then) or im2col, each
  // with its driver plans (the direct conv's tiles have no L2 blocking to choose).
  std::vector<std::string> algos = {"im2col"};
  std::vector<std::vector<std::string>> plans = {gemmPlanChoices(ctx.threads())};
  if (directConvApplies(s, tiles.nr)) {
    algos.insert(algos.begin(), "direct");
    plans.insert(plans.begin(), gemmPlanChoices(ctx.threads(), /*blocking=*/false));
  }
  const std::string choice = ctx.tuned(
      fmt::format("conv2d {} {}", shape,
                  epilogueKey(n, fused, n.input(2) != nullptr, residual != nullFloat())),
      withPlans(algos, plans));
  const std::string plan = gemmPlanLiteral(choice);
  if (startsWith(choice, "direct")) {
    // kiln_cpu::conv2d_direct_scratch_floats: band planes, then a tile per thread.
    const int64_t floats = directConvPlanesScratch(s, tiles.nr, ctx.threads()) +
                           int64_t(ctx.threads()) * tiles.mr * tiles.nr;
    // Weights in strips of mr rows, each strip's whole K contiguous:
    // kiln_cpu::conv2d_direct_pack_weights.
    const int64_t per = ((Mg + tiles.mr - 1) / tiles.mr * tiles.mr * K + 15) / 16 * 16;
    std::vector<float> dpacked(size_t(per * group), 0.0f);
    for (int64_t g = 0; g < group; ++g)
      for (int64_t m = 0; m < Mg; ++m)
        for (int64_t k = 0; k < K; ++k)
          dpacked[size_t(g * per + ((m / tiles.mr) * K + k) * tiles.mr + m % tiles.mr)] =
              wsrc[(g * Mg + m) * K + k];
    std::string dwp =
        ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(dpacked.size())}, dpacked));
    useCpuHeaders(ctx, "kiln_cpu/conv_direct.h");
    ctx.call("kiln_cpu::conv2d_direct_f32__" + tileName(target),
             tileCheck(target) +
                 fmt::format("static_assert(kiln_cpu::conv2d_direct_applies({0}, {7}) && "
                             "kiln_cpu::conv2d_direct_scratch_floats({0}, {8}, {7}) == {9} && "
                             "kiln_cpu::conv2d_direct_packed_weight_floats({0}) == {11}, \"kiln and "
                             "kiln_cpu disagree on the direct conv\"); "
                             "kiln_cpu::conv2d_direct_f32({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {10}, "
                             "{12});",
                             shape, ctx.input(0), dwp, bias, ctx.output(0), epi,
                             floatScratch(ctx, floats), kDirectConvMaxPlaneFloats, ctx.threads(),
                             floats, ctx.threadPool(), per * group, plan));
    return true;
  }
  std::vector<float> packed(size_t(perGroup * group), 0.0f);
  for (int64_t g = 0; g < group; ++g)
    packA(wsrc + g * Mg * K, K, Mg, K, tiles, packed.data() + g * perGroup);
  std::string wp =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(packed.size())}, packed));
  std::string scratch =
      floatScratch(ctx, packFloatsPerThread(s[7] * s[8], K, tiles) * ctx.threads());
  useCpuHeaders(ctx, "kiln_cpu/conv.h");
  ctx.call("kiln_cpu::conv2d_f32__" + tileName(target),
           tileCheck(target) + fmt::format("kiln_cpu::conv2d_f32({}, {}, {}, {}, {}, {}, {}, {}, {});",
                                           shape, ctx.input(0), wp, bias, ctx.output(0), epi,
                                           scratch, ctx.threadPool(), plan));
  return true;
}

Expected<bool> emitCpuNhwcConv(const Node& n, EmitContext& ctx) {
  if (!ctx.target().optimizedKernels() || !allF32(n)) return false;
  const Tensor* wt = ctx.value(1);
  if (!wt) return false;
  auto x = n.input(0)->shape().staticDims();
  auto wd = n.input(1)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  if (x.size() != 4 || wd.size() != 4 || y.size() != 4) return false;
  for (const auto* dims : {&x, &wd, &y})
    for (int64_t d : *dims)
      if (d <= 0) return false;
  // [N, H, W, C] and [N, OH, OW, M] seen channels-first for the window's geometry.
  SlidingWindow w = slidingWindowOf(n, {x[0], x[3], x[1], x[2]}, {y[0], y[3], y[1], y[2]},
                                    {wd[2], wd[3]});
  if (!w.valid()) return false;
  const int64_t group = n.attrInt("group", 1), C = x[3], M = y[3];
  std::string epiAct = activationOf(n, true);
  std::string residual = n.numInputs() > 3 && n.input(3) ? ctx.input(3) : nullFloat();
  const float* wsrc = wt->data<float>();
  const bool pointwise = wd[2] == 1 && wd[3] == 1 && group == 1 && w.strides == std::vector<int64_t>{1, 1} &&
                         std::all_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p == 0; });
  if (pointwise) {
    // y[N*H*W, M] = x[N*H*W, C] * W^T: the weights are B, packed at compile time.
    std::string bias = n.input(2) ? ctx.input(2) : nullFloat();
    useCpuHeaders(ctx, "kiln_cpu/gemm.h");
    emitPackedB(ctx, x[0] * x[1] * x[2], M, C, wsrc, 1, C,
                fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, {})", epiAct, nullFloat(),
                            bias, residual, M),
                epilogueKey(n, true, n.input(2) != nullptr, residual != nullFloat()),
                /*rowA=*/true);
    return true;
  }
  if (group != C || M != C || wd[1] != 1) return false;
  // Depthwise: the filter tap-major, [KH * KW, C] (kiln_cpu::depthwise_nhwc_pack_weights).
  const int64_t taps = wd[2] * wd[3];
  std::vector<float> packed(size_t(taps * C));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t) packed[size_t(t * C + c)] = wsrc[c * taps + t];
  std::string wp = ctx.derivedWeight(Tensor::fromVector(DType::F32, {taps * C}, packed));
  std::vector<int64_t> s = {x[0],         C,           x[1],         x[2],        M,
                            wd[2],        wd[3],       y[1],         y[2],        w.strides[0],
                            w.strides[1], w.dilations[0], w.dilations[1], w.pads[0], w.pads[1],
                            group};
  useCpuHeaders(ctx, "kiln_cpu/conv_nhwc.h");
  ctx.call("kiln_cpu::depthwise_conv2d_nhwc_f32__" + ctx.target().kernelIsa(),
           fmt::format("kiln_cpu::depthwise_conv2d_nhwc_f32(kiln_cpu::Conv2dShape{{{}}}, {}, {}, "
                       "{}, {}, kiln_cpu::make_epilogue({}, {}, {}, {}, 0), {});",
                       fmt::join(s, ", "), ctx.input(0), wp, n.input(2) ? ctx.input(2) : nullFloat(),
                       ctx.output(0), epiAct, nullFloat(), nullFloat(), residual, ctx.threadPool()));
  return true;
}

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
    } else {
      return false;
    }
  }
  if (hasResidual) residual = ctx.input(3);
  std::string epi = fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, {})",
                                activationOf(n, fused), rowBias, colBias, residual, N);
  const Tiles tiles = tilesFor(target);
  useCpuHeaders(ctx, "kiln_cpu/gemm.h");
  if (const Tensor* bt = ctx.value(1)) {
    // B is [K, N], or [N, K] with transB.
    emitPackedB(ctx, M, N, K, bt->data<float>(), transB ? 1 : N, transB ? K : 1, epi,
                epilogueKey(n, fused, rowBias != nullFloat() || colBias != nullFloat(),
                            residual != nullFloat()));
    return true;
  }
  if (transB) return false;
  std::string scratch = floatScratch(
      ctx, packedAFloats(M, K, tiles) + packFloatsPerThread(N, K, tiles) * ctx.threads());
  ctx.call("kiln_cpu::gemm_f32__" + tileName(target),
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
                epilogueKey(n, fused, colBias != nullFloat(), residual != nullFloat()));
    return true;
  }
  std::string epi = fmt::format("kiln_cpu::make_epilogue({}, {}, {}, {}, {})", act, nullFloat(),
                                colBias, residual, N);
  std::string scratch = floatScratch(
      ctx, packedAFloats(M, K, tiles) + packFloatsPerThread(N, K, tiles) * ctx.threads());
  ctx.call("kiln_cpu::matmul_f32__" + tileName(target),
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
  std::string scratch = floatScratch(
      ctx, (Mk * block + 15) / 16 * 16 + packFloatsPerThread(block, C, tiles) * ctx.threads());
  useCpuHeaders(ctx, "kiln_cpu/conv.h");
  ctx.call(
      "kiln_cpu::conv_transpose2d_f32__" + tileName(target),
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
  ctx.call("kiln_cpu::max_pool2d_f32__" + ctx.target().kernelIsa(),
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
  ctx.call("kiln_cpu::softmax_rows_f32__" + ctx.target().kernelIsa(),
           fmt::format("kiln_cpu::softmax_rows_f32({}, {}, {}, {}, {}, {});", rows, cols,
                       ctx.input(0), ctx.output(0), n.opType() == "LogSoftmax",
                       ctx.threadPool()));
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
  ctx.call("kiln_cpu::layer_norm_rows_f32__" + ctx.target().kernelIsa(),
           fmt::format("kiln_cpu::layer_norm_rows_f32({}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                       rows, cols, ctx.input(0), ctx.input(1),
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
  if (n.opType() == "Sigmoid") {
    ctx.useHeader("kiln_cpu/eltwise.h");
    std::string out = ctx.outputInPlace(0, {0});
    ctx.call("kiln_cpu::sigmoid_f32__" + ctx.target().kernelIsa(),
             fmt::format("kiln_cpu::sigmoid_f32({}, {}, {}, {});", count, ctx.input(0), out,
                         ctx.threadPool()));
    return true;
  }
  if (n.opType() == "GlobalAveragePool" && x.size() >= 2) {
    const int64_t planes = x[0] * x[1];
    ctx.useHeader("kiln_cpu/eltwise.h");
    ctx.call("kiln_cpu::global_average_pool_f32__" + ctx.target().kernelIsa(),
             fmt::format("kiln_cpu::global_average_pool_f32({}, {}, {}, {}, {});", planes,
                         count / planes, ctx.input(0), ctx.output(0), ctx.threadPool()));
    return true;
  }
  return false;
}

}  // namespace kiln
