// Emission of f32 convolutions onto kernels/cpu (kiln_cpu): Conv / FusedConv (2-D and 1-D;
// direct, im2col or Winograd, the choice tunable; depthwise) and kiln.NhwcConv. Constant weights
// are packed here, at compile time, for the target's tiles.
#include <algorithm>
#include <cmath>

#include "conv_cost.h"
#include "cpu/amx_weights.h"
#include "cpu/winograd_weights.h"
#include "cpu_emit.h"
#include "cpu_emit_support.h"
#include "emit_support.h"
#include "kiln/ops/fused.h"

namespace kiln {

using namespace cpu_detail;

namespace {

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

/// The band budget (floats of phase planes) the direct conv runs with: 1 MiB, about the L2
/// cache, less the weights of a group when they fit in it too (each band re-reads all of them,
/// from L2 if they stay there), but at least 256 KiB and at least one output row. Weights
/// bigger than L2 stream from L3 once per band whatever the planes, so the bands stay tall.
/// ResNet-50's 56x56 -> 28x28 stride-2 conv (128 channels, 576 KiB of weights, 1.7 MiB of
/// planes): 1.45-1.52 -> 1.33-1.37 ms at 1 thread in 448 KiB bands rather than 1 MiB
/// (kiln_kernels_bench); its 14x14 -> 7x7 one (9 MiB of weights) was 5-10% slower in smaller
/// bands.
int64_t directConvBandBudget(const std::vector<int64_t>& s, int64_t nr) {
  const int64_t weights = s[4] / s[15] * (s[1] / s[15]) * s[5] * s[6];  // floats, one group
  int64_t budget = kDirectConvMaxPlaneFloats;
  if (weights < kDirectConvMaxPlaneFloats)
    budget = std::max(kDirectConvMaxPlaneFloats - weights, kDirectConvMaxPlaneFloats / 4);
  return std::max(budget, directConvPlaneFloats(s, 1, nr));
}

/// The planes part of kiln_cpu::conv2d_direct_scratch_floats: the tallest band that fits the
/// budget (conv_direct_detail::planes_of), once per thread when it is shorter than the output or
/// there are several threads (each fills its own bands).
int64_t directConvPlanesScratch(const std::vector<int64_t>& s, int64_t nr, int threads) {
  const int64_t budget = directConvBandBudget(s, nr);
  int64_t rows = s[7];
  while (rows > 1 && directConvPlaneFloats(s, rows, nr) > budget) --rows;
  return directConvPlaneFloats(s, rows, nr) * (rows < s[7] || threads > 1 ? threads : 1);
}

/// kiln_cpu::conv2d_direct_applies: more than one tap and at most 64, begin pads inside the
/// kernel's extent, planes within the budget.
bool directConvApplies(const std::vector<int64_t>& s, int64_t nr) {
  const int64_t taps = s[5] * s[6];
  return taps > 1 && taps <= 64 && s[13] <= (s[5] - 1) * s[11] && s[14] <= (s[6] - 1) * s[12] &&
         directConvPlaneFloats(s, 1, nr) <= kDirectConvMaxPlaneFloats;
}

/// kiln_cpu::conv2d_winograd_applies for s (see directConvPlaneFloats for the layout of s).
bool winogradApplies(const std::vector<int64_t>& s) {
  return s[5] == 3 && s[6] == 3 && s[9] == 1 && s[10] == 1 && s[11] == 1 && s[12] == 1 &&
         s[15] == 1 && s[13] >= 0 && s[13] <= 2 && s[14] >= 0 && s[14] <= 2;
}

/// kiln_cpu::conv2d_winograd_s2_applies: 3x3, stride 2, dilation 1, group 1, begin pads <= 2,
/// an image small enough for 32-bit gather offsets.
bool winogradS2Applies(const std::vector<int64_t>& s) {
  return s[5] == 3 && s[6] == 3 && s[9] == 2 && s[10] == 2 && s[11] == 1 && s[12] == 1 &&
         s[15] == 1 && s[13] >= 0 && s[13] <= 2 && s[14] >= 0 && s[14] <= 2 &&
         s[2] < (int64_t(1) << 31) && s[3] < (int64_t(1) << 31) &&
         (s[2] + 16) * (s[3] + 16) < (int64_t(1) << 31);
}

/// kiln_cpu::conv2d_winograd_scratch_floats (winograd_detail::scratch_of) for the target's
/// tiles and the output tile side tm (4: F(4x4, 3x3), 2: F(2x2, 3x3)): per thread, a block's
/// xi = (tm + 2)^2 transformed-input matrices (81 for the stride-2 conv), an output-channel
/// chunk's xi product matrices, and the output transform's buffer.
int64_t winogradScratchFloats(const std::vector<int64_t>& s, const Tiles& t, int threads,
                              int tm) {
  const int64_t C = s[1], M = s[4], lanes = t.nr / 2;
  const int64_t xi = s[9] == 2 ? 81 : (tm + 2) * (tm + 2);
  const int64_t chunk = kiln_cpu::winograd_chunk_width(M, t.nr);
  const int64_t tiles = winogradTiles(s, tm);
  const int64_t budget = int64_t(1) << (s[9] == 2 ? 19 : 18), perTile = xi * (C + chunk);
  const int64_t strips = std::clamp<int64_t>(budget / (perTile * t.mr), 1, 8);
  // The whole image as one block when it fits (block_tiles).
  const int64_t tb = tiles * perTile <= budget && tiles <= 8 * t.mr ? tiles
                                                                     : std::min(strips * t.mr, tiles);
  auto xiStride = [](int64_t n) {
    const int64_t lines = (n + 15) / 16;
    return (lines % 2 == 0 ? lines + 1 : lines) * 16;
  };
  return (xi * xiStride(C * tb) + xi * xiStride(tb * chunk) + (16 * lanes + 15) / 16 * 16) *
         threads;
}

/// kiln_cpu::conv2d_pointwise for s: 1x1, stride 1, no pads (its im2col matrix is X).
bool pointwiseConv(const std::vector<int64_t>& s) {
  return s[5] == 1 && s[6] == 1 && s[9] == 1 && s[10] == 1 && s[13] == 0 && s[14] == 0 &&
         s[7] == s[2] && s[8] == s[3];
}

/// kiln_cpu::conv2d_subsample_floats: the input pixels a strided 1x1 conv reads (conv2d_f32).
int64_t subsampleFloats(const std::vector<int64_t>& s) {
  const bool strided = s[5] == 1 && s[6] == 1 && (s[9] != 1 || s[10] != 1) && s[13] == 0 &&
                       s[14] == 0 && (s[7] - 1) * s[9] < s[2] && (s[8] - 1) * s[10] < s[3];
  return strided ? (s[1] * s[7] * s[8] + 15) / 16 * 16 : 0;
}

/// 32-column panels (AVX-512), where conv2d_f32 reads a 1x1 conv's X in place
/// (kiln_cpu::kPointwiseInPlace) and pixel rows are a default; AVX2 has 16.
bool widePanels(const Tiles& t) { return t.nr >= 32; }

/// The share of vector lanes n outputs fill in panels of nr columns (a last partial panel of
/// at most nr / 2 takes one vector): conv2d_f32 puts pixels there, conv2d_pixrows_f32 channels.
double laneShare(int64_t n, int64_t nr) {
  const int64_t rest = n % nr;
  return double(n) / double(n - rest + (rest == 0 ? 0 : rest <= nr / 2 ? nr / 2 : nr));
}

/// conv2d_pixrows_f32 (pixels as the GEMM's rows) as a candidate: group 1, images of at most
/// 32x32 outputs, and an im2col matrix (when not pointwise) of at most 4 MiB. The cost model's
/// pick where its channels fill the lanes better than the pixels do (kernels/cpu's bench, 1
/// thread: ResNet-50's 7x7 1x1 convs 86 -> 108 GFLOP/s, 14x14 ones 95-103 -> 110-113).
bool pixrowsApplies(const std::vector<int64_t>& s) {
  const bool pointwise = pointwiseConv(s);
  const int64_t P = s[7] * s[8];
  return s[15] == 1 && P <= 1024 && (pointwise || s[1] * s[5] * s[6] * P <= (int64_t(1) << 20));
}

/// kiln_cpu::conv2d_pixrows_scratch_floats for the target's tiles: a K-chunk of the im2col
/// matrix (none for a pointwise conv; for images of at most 4 nr pixels, chunks whose rows of
/// A and of two panels fit the target's l2Share()), then with several chunks a kMR x kNR block of
/// partial sums per tile.
int64_t pixrowsScratchFloats(const std::vector<int64_t>& s, const Tiles& t,
                             const Target& target) {
  const int64_t chunkBytes = target.l2Share();
  const int64_t K = s[1] * s[5] * s[6], P = s[7] * s[8], M = s[4];
  const int64_t chunks =
      P > 4 * t.nr ? 1
                   : std::clamp<int64_t>(
                         (K * (P + 2 * t.nr) * 4 + chunkBytes - 1) / chunkBytes,
                         1, K);
  const int64_t rows = (K + chunks - 1) / chunks;
  const int64_t a = pointwiseConv(s) ? 0 : (rows * P + 15) / 16 * 16;
  const int64_t sums = chunks > 1 ? (M + t.nr - 1) / t.nr * ((P + t.mr - 1) / t.mr) * t.mr * t.nr : 0;
  return a + sums;
}

/// Whether the output channels fill the vector lanes better than the pixels do.
bool channelsFillLanes(const std::vector<int64_t>& s, const Tiles& t) {
  return laneShare(s[4], t.nr) > laneShare(s[7] * s[8], t.nr) + 0.02;
}

/// Only with 32-column panels (AVX-512): on AVX2 (6x16 tiles, a Zen 3), conv2d_f32 with packed
/// panels measured 10-40% faster than pixel rows on every ResNet-50 7x7-stage conv (512 -> 2048
/// 1.84 against 2.68 ms, 2048 -> 512 2.18 against 3.10; 3x3 stride 2 4.5 against 4.7), though
/// 49 pixels fill only 7/8 of its lanes there; and faster than the direct conv (6.7 ms).
bool pixrowsByDefault(const std::vector<int64_t>& s, const Tiles& t) {
  return widePanels(t) && channelsFillLanes(s, t);
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
    ctx.call(cpuKernel(cpu_kernels::Kernel::depthwise_conv2d_f32, target),
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
  // Tunable: Winograd (3x3 stride 1; the cost model's pick where winogradByDefault, conv_cost.h),
  // the direct conv (where it applies; the pick then) or im2col, the last two with their thread
  // splits. The cost model's splits, from --tune on ResNet-50 at 2 threads: the direct conv shares
  // one band's planes, and splitting its tiles over rows only was 3-14% faster on every layer; a
  // strided im2col packs a gather per unit, which a row split repeats in every thread (columns
  // only: 1-12% faster).
  auto first = [](std::vector<std::string> plans, const std::string& word) {
    auto it = std::find(plans.begin(), plans.end(), word);
    if (it != plans.end()) std::rotate(plans.begin(), it, it + 1);
    return plans;
  };
  // So does every im2col but a 1x1 conv's read in place (32-column panels): a Zen 3 (AVX2) at 2
  // threads, ResNet-50's 7x7 2048 -> 512 1.67 against 1.03 ms, 14x14 1024 -> 512 3.38 against
  // 1.65 (row chunks of at most 16 strips pack all of B each); its 3x3 convs at 7x7, --tune
  // candidates, 101 against 5.9 ms.
  const bool packsPerUnit = !pointwiseConv(s) || !widePanels(tiles);
  std::vector<std::string> algos = {"im2col"};
  std::vector<std::vector<std::string>> plans = {
      packsPerUnit ? first(gemmPlanChoices(ctx.threads()), "cols")
                   : gemmPlanChoices(ctx.threads())};
  if (directConvApplies(s, tiles.nr)) {
    const bool im2colFirst =
        !widePanels(tiles) && pixrowsApplies(s) && channelsFillLanes(s, tiles);
    algos.insert(im2colFirst ? algos.end() : algos.begin(), "direct");
    plans.insert(im2colFirst ? plans.end() : plans.begin(),
                 first(gemmPlanChoices(ctx.threads()), "rows"));
  }
  if (pixrowsApplies(s)) {
    const bool first = pixrowsByDefault(s, tiles);
    algos.insert(first ? algos.begin() : algos.end(), "pixrows");
    plans.insert(first ? plans.begin() : plans.end(), std::vector<std::string>{""});
  }
  if (winogradApplies(s)) {
    const bool first = winogradByDefault(s, target, ctx.threads());
    algos.insert(first ? algos.begin() : algos.end(), "winograd");
    plans.insert(first ? plans.begin() : plans.end(), std::vector<std::string>{""});
    const bool first2 = winograd2ByDefault(s, target, ctx.threads());
    algos.insert(first2 ? algos.begin() : algos.end(), "winograd2");
    plans.insert(first2 ? plans.begin() : plans.end(), std::vector<std::string>{""});
  }
  if (winogradS2Applies(s)) {
    const bool first = winogradS2ByDefault(s, target);
    algos.insert(first ? algos.begin() : algos.end(), "winograd_s2");
    plans.insert(first ? plans.begin() : plans.end(), std::vector<std::string>{""});
  }
  // With --amx on a target with AMX (Target::amxF32, amxPieces), a group-1 1x1 conv on AMX
  // tiles in bf16 pieces, first: in two pieces ResNet-50's 1x1 convs ran 1.25-2.4x faster than
  // pixel rows at 1 thread on an Intel Xeon (docs/targets.md, session 56). Only for weights
  // that are all finite: a piece product of an infinite one would be inf * 0 = NaN.
  if (target.amxF32 && target.amxPieces > 0 && group == 1 && pointwiseConv(s) &&
      std::all_of(wsrc, wsrc + wt->numElements(), [](float v) { return std::isfinite(v); })) {
    algos.insert(algos.begin(), "amx");
    plans.insert(plans.begin(), std::vector<std::string>{""});
  }
  const std::string choice = ctx.tuned(
      fmt::format("conv2d {} {}", shape,
                  epilogueKey(n, fused, n.input(2) != nullptr, residual != nullFloat())),
      withPlans(algos, plans));
  const std::string plan = gemmPlanLiteral(choice);
  // The output over the residual's buffer where nothing later reads it (ResNet's blocks: the
  // block's input, last read by conv3 + Add): a tile's lines come in once and go out once,
  // where two buffers stream twice the lines through the caches. Only for kernels that read
  // each residual element once, just before writing that output element, and keep no partial
  // sums in y: pixel rows, the direct conv, and the GEMM with one k block (K <= kiln_cpu::kKC;
  // past it, earlier blocks' sums wait in y).
  const bool hasResidual = residual != nullFloat();
  auto outputOverResidual = [&] { return hasResidual ? ctx.outputOverInput(0, 3) : ctx.output(0); };
  if (choice == "winograd" || choice == "winograd2" || choice == "winograd_s2") {
    const int tm = choice == "winograd2" ? 2 : 4, stride = choice == "winograd_s2" ? 2 : 1;
    const cpu_kernels::Kernel kernel = stride == 2 ? cpu_kernels::Kernel::conv2d_winograd_s2_f32
                                       : tm == 2   ? cpu_kernels::Kernel::conv2d_winograd2_f32
                                                   : cpu_kernels::Kernel::conv2d_winograd_f32;
    const std::string fn(cpu_kernels::kKernels[size_t(kernel)].name);
    const std::string applies =
        stride == 2 ? "conv2d_winograd_s2_applies" : "conv2d_winograd_applies";
    const int64_t floats = winogradScratchFloats(s, tiles, ctx.threads(), tm);
    // kiln_cpu::conv2d_winograd_pack_weights, for the target's panel width.
    std::vector<float> packed(size_t((tm + 2) * (tm + 2) *
                                     ((wd[0] + tiles.nr - 1) / tiles.nr * tiles.nr) * s[1]));
    kiln_cpu::winograd_transform_weights(wsrc, wd[0], s[1], tiles.nr, packed.data(), tm, stride);
    std::string wp =
        ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(packed.size())}, packed));
    useCpuHeaders(ctx, "kiln_cpu/winograd.h");
    ctx.call(cpuKernel(kernel, target),
             tileCheck(target) +
                 fmt::format("static_assert(kiln_cpu::{13}({0}) && "
                             "kiln_cpu::conv2d_winograd_scratch_floats({0}, {7}, {11}) == {8} && "
                             "kiln_cpu::conv2d_winograd_packed_weight_floats({0}, {11}) == {9}, "
                             "\"kiln and kiln_cpu disagree on the Winograd conv\"); "
                             "kiln_cpu::{12}({0}, {1}, {2}, {3}, {4}, {5}, {6}, {10});",
                             shape, ctx.input(0), wp, bias, ctx.output(0), epi,
                             floatScratch(ctx, floats), ctx.threads(), floats, packed.size(),
                             ctx.threadPool(), tm, fn, applies));
    return true;
  }
  if (choice == "amx") {
    // W's bf16 pieces as AMX A tiles (kiln_cpu::amx_pack_weights), then one pixel block's B
    // tiles per thread in scratch (kiln_cpu::conv2d_amx_scratch_bytes).
    const int np = target.amxPieces;
    std::vector<uint16_t> packed(size_t(kiln_cpu::amx_packed_weight_bytes(wd[0], K, np) / 2));
    kiln_cpu::amx_pack_weights(wsrc, wd[0], K, np, packed.data());
    std::string wp =
        ctx.derivedWeight(Tensor::fromVector(DType::BF16, {int64_t(packed.size())}, packed));
    const int64_t bytes = kiln_cpu::amx_scratch_bytes(K, s[7] * s[8], wd[0], ctx.threads(), np);
    const int64_t floats = bytes / 4;
    useCpuHeaders(ctx, "kiln_cpu/conv_amx.h");
    ctx.call(cpuKernel(cpu_kernels::Kernel::conv2d_amx_f32, target),
             fmt::format("static_assert(kiln_cpu::conv2d_amx_applies({0}) && "
                         "kiln_cpu::conv2d_amx_scratch_bytes({0}, {10}, {11}) == {7} && "
                         "kiln_cpu::conv2d_amx_packed_weight_bytes({0}, {11}) == {8}, \"kiln and "
                         "kiln_cpu disagree on the AMX conv\"); "
                         "kiln_cpu::conv2d_amx_f32<{11}>({0}, {1}, reinterpret_cast<const "
                         "uint16_t*>({2}), {3}, {4}, {5}, {6}, {9}, {10});",
                         shape, ctx.input(0), wp, bias, outputOverResidual(), epi,
                         floatScratch(ctx, floats), bytes, packed.size() * 2, ctx.threadPool(),
                         ctx.threads(), np));
    return true;
  }
  if (choice == "pixrows") {
    // W^T [K, M] in the GEMM's B panels: kiln_cpu::conv2d_pixrows_pack_weights.
    std::vector<float> packed = packBPanels(wsrc, K, wd[0], /*sk=*/1, /*sn=*/K, tiles);
    std::string wp =
        ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(packed.size())}, packed));
    const int64_t floats = pixrowsScratchFloats(s, tiles, target);
    useCpuHeaders(ctx, "kiln_cpu/conv_pixrows.h");
    ctx.call(
        cpuKernel(cpu_kernels::Kernel::conv2d_pixrows_f32, target),
        tileCheck(target) +
            fmt::format("static_assert(kiln_cpu::conv2d_pixrows_applies({0}) && "
                        "kiln_cpu::conv2d_pixrows_scratch_floats({0}) == {7} && "
                        "kiln_cpu::conv2d_pixrows_packed_weight_floats({0}) == {8}, \"kiln "
                        "and kiln_cpu disagree on the pixel-rows conv\"); "
                        "kiln_cpu::conv2d_pixrows_f32({0}, {1}, {2}, {3}, {4}, {5}, {6}, {9});",
                        shape, ctx.input(0), wp, bias, outputOverResidual(), epi,
                        floatScratch(ctx, floats), floats, packed.size(), ctx.threadPool()));
    return true;
  }
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
    ctx.call(
        cpuKernel(cpu_kernels::Kernel::conv2d_direct_f32, target),
        tileCheck(target) +
            fmt::format("static_assert(kiln_cpu::conv2d_direct_applies({0}, {7}) && "
                        "kiln_cpu::conv2d_direct_scratch_floats({0}, {8}, {7}) == {9} && "
                        "kiln_cpu::conv2d_direct_packed_weight_floats({0}) == {11}, \"kiln and "
                        "kiln_cpu disagree on the direct conv\"); "
                        "kiln_cpu::conv2d_direct_f32({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {10}, "
                        "{12});",
                        shape, ctx.input(0), dwp, bias, outputOverResidual(), epi,
                        floatScratch(ctx, floats), directConvBandBudget(s, tiles.nr), ctx.threads(),
                        floats, ctx.threadPool(), per * group, plan));
    return true;
  }
  std::vector<float> packed(size_t(perGroup * group), 0.0f);
  for (int64_t g = 0; g < group; ++g)
    packA(wsrc + g * Mg * K, K, Mg, K, tiles, packed.data() + g * perGroup);
  std::string wp =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(packed.size())}, packed));
  const int64_t floats =
      subsampleFloats(s) + packFloatsPerThread(s[7] * s[8], K, tiles) * ctx.threads();
  useCpuHeaders(ctx, "kiln_cpu/conv.h");
  const bool over = hasResidual && oneKBlock(K);
  ctx.call(cpuKernel(cpu_kernels::Kernel::conv2d_f32, target),
           tileCheck(target) + (over ? oneKBlockCheck(K) : std::string()) +
               fmt::format("static_assert(kiln_cpu::conv2d_scratch_floats({}, {}) == {}, \"kiln "
                           "and kiln_cpu disagree on the conv's scratch\"); ",
                           shape, ctx.threads(), floats) +
               fmt::format("kiln_cpu::conv2d_f32({}, {}, {}, {}, {}, {}, {}, {}, {});", shape,
                           ctx.input(0), wp, bias, over ? outputOverResidual() : ctx.output(0), epi,
                           floatScratch(ctx, floats), ctx.threadPool(), plan));
  return true;
}

namespace {

/// kiln_cpu::expand_dw_scratch_floats for s = [N, C, H, W, M, KH, KW, OH, OW, SH, SW, DH, DW,
/// PH, PW, group] (the depthwise conv): one band of E rows per thread, a band's rows the most
/// whose E fits 3/2 of the target's L2 share at 1 thread, the share at more (in floats), at
/// most N*OH / (2 * threads) with threads.
int64_t expandDwScratchFloats(const std::vector<int64_t>& s, int threads, int64_t l2Share) {
  auto inRows = [&](int64_t rows) { return (rows - 1) * s[9] + (s[5] - 1) * s[11] + 1; };
  const int64_t budget = (threads > 1 ? l2Share : l2Share * 3 / 2) / 4;
  int64_t rows = s[7];
  while (rows > 1 && inRows(rows) * s[3] * s[1] > budget) --rows;
  const int64_t even = (s[0] * s[7] + 2 * threads - 1) / (2 * threads);
  if (threads > 1 && even < rows) rows = std::max<int64_t>(even, 1);
  return (std::min(inRows(rows), s[2]) * s[3] * s[1] + 15) / 16 * 16 * threads;
}

}  // namespace

Expected<bool> emitCpuNhwcExpandDw(const Node& n, EmitContext& ctx) {
  const Target& target = ctx.target();
  if (!target.optimizedKernels() || !allF32(n)) return false;
  const Tensor* w1 = ctx.value(1);
  const Tensor* wdw = ctx.value(3);
  if (!w1 || !wdw) return false;
  auto x = n.input(0)->shape().staticDims();
  auto w1d = n.input(1)->shape().staticDims();
  auto wd = n.input(3)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  if (x.size() != 4 || w1d.size() != 4 || wd.size() != 4 || y.size() != 4) return false;
  for (const auto* dims : {&x, &w1d, &wd, &y})
    for (int64_t d : *dims)
      if (d <= 0) return false;
  const int64_t Cin = x[3], C = w1d[0];
  SlidingWindow w = slidingWindowOf(n, {x[0], C, x[1], x[2]}, {y[0], y[3], y[1], y[2]},
                                    {wd[2], wd[3]});
  if (!w.valid() || n.attrInt("group", 1) != C || wd[0] != C || wd[1] != 1 || y[3] != C ||
      w1d[1] != Cin)
    return false;
  const Tiles tiles = tilesFor(target);
  std::vector<float> panels = packBPanels(w1->data<float>(), Cin, C, 1, Cin, tiles);
  std::string w1p =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(panels.size())}, panels));
  std::string wdp = depthwiseNhwcWeights(ctx, wdw->data<float>(), C, wd[2] * wd[3]);
  std::vector<int64_t> s = {x[0],         C,           x[1],           x[2],           C,
                            wd[2],        wd[3],       y[1],           y[2],           w.strides[0],
                            w.strides[1], w.dilations[0], w.dilations[1], w.pads[0], w.pads[1],
                            C};
  const std::string shape = fmt::format("kiln_cpu::Conv2dShape{{{}}}", fmt::join(s, ", "));
  const int64_t floats = expandDwScratchFloats(s, ctx.threads(), target.l2Share());
  const std::string act1 =
      activationFunctorFor(n.attrString(std::string(kExpandPrefix) + kActivationAttr, ""), n,
                           std::string(kExpandPrefix) + "activation_");
  useCpuHeaders(ctx, "kiln_cpu/conv_nhwc_fused.h");
  ctx.call(cpuKernel(cpu_kernels::Kernel::nhwc_expand_dw_f32, target),
           tileCheck(target) +
               fmt::format("static_assert(kiln_cpu::expand_dw_scratch_floats({0}, {1}) == {2}, "
                           "\"kiln and kiln_cpu disagree on the expand+depthwise scratch\"); "
                           "kiln_cpu::nhwc_expand_dw_f32({0}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, "
                           "{10}, kiln_cpu::make_epilogue({11}, {12}, {12}, {12}, 0), {13}, {1}, "
                           "{14});",
                           shape, ctx.threads(), floats, Cin, ctx.input(0), w1p, ctx.input(2),
                           act1, wdp, ctx.input(4), ctx.output(0), activationOf(n, true),
                           nullFloat(), floatScratch(ctx, floats), ctx.threadPool()));
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
  if (n.attrInt("nchw_input", 0) != 0) {
    // x [N, C, H, W] in, y [N, OH, OW, M] out: pixels as the GEMM's rows, written in place.
    if (n.attrInt("group", 1) != 1) return false;
    SlidingWindow w = slidingWindowOf(n, x, {y[0], y[3], y[1], y[2]}, {wd[2], wd[3]});
    if (!w.valid()) return false;
    const int64_t K = wd[1] * wd[2] * wd[3], M = y[3];
    const std::vector<int64_t> s = {x[0],         x[1],         x[2],           x[3],
                                    M,            wd[2],        wd[3],          y[1],
                                    y[2],         w.strides[0], w.strides[1],   w.dilations[0],
                                    w.dilations[1], w.pads[0],  w.pads[1],      1};
    std::vector<float> packed = packBPanels(wt->data<float>(), K, M, 1, K, tilesFor(ctx.target()));
    std::string wp =
        ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(packed.size())}, packed));
    const bool pointwise = pointwiseConv(s);
    // kiln_cpu::conv2d_pixrows_nhwc_scratch_floats: per thread, the phase planes of a band of
    // kPixrowsPlaneBandRows = 4 output rows (conv2d_pixrows_planes: wider than 1x1, at most 64
    // taps, begin pads inside the kernel), else the im2col of a block of whole strips whose K x
    // block floats fit 2^14 (conv2d_pixrows_block).
    const Tiles tiles = tilesFor(ctx.target());
    const int64_t taps = s[5] * s[6], mr = tiles.mr, P = s[7] * s[8];
    const bool planes = !pointwise && taps > 1 && taps <= 64 && s[13] <= (s[5] - 1) * s[11] &&
                        s[14] <= (s[6] - 1) * s[12];
    const int64_t block = std::min(P, std::max<int64_t>((int64_t(1) << 14) / (K * mr), 1) * mr);
    const int64_t floats = planes      ? directConvPlaneFloats(s, std::min<int64_t>(s[7], 4),
                                                                tiles.nr) * ctx.threads()
                           : pointwise ? 0
                                       : K * block * ctx.threads();
    const std::string shape = fmt::format("kiln_cpu::Conv2dShape{{{}}}", fmt::join(s, ", "));
    std::string residual = n.numInputs() > 3 && n.input(3) ? ctx.input(3) : nullFloat();
    useCpuHeaders(ctx, "kiln_cpu/conv_pixrows.h");
    ctx.call(cpuKernel(cpu_kernels::Kernel::conv2d_pixrows_nhwc_f32, ctx.target()),
             tileCheck(ctx.target()) +
                 fmt::format("static_assert(kiln_cpu::conv2d_pixrows_nhwc_scratch_floats({0}, {11}) "
                             "== {6}, \"kiln and kiln_cpu disagree on the pixel-rows conv\"); "
                             "kiln_cpu::conv2d_pixrows_nhwc_f32({0}, {1}, {2}, {3}, {4}, "
                             "kiln_cpu::make_epilogue({5}, {7}, {7}, {8}, 0), {9}, {10});",
                             shape, ctx.input(0), wp, n.input(2) ? ctx.input(2) : nullFloat(),
                             ctx.output(0), activationOf(n, true), floats, nullFloat(), residual,
                             floatScratch(ctx, floats), ctx.threadPool(), ctx.threads()));
    return true;
  }
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
                /*rowA=*/true, residual != nullFloat() ? 3 : -1);
    return true;
  }
  if (group != C || M != C || wd[1] != 1) return false;
  emitNhwcDepthwise(n, ctx,
                    {x[0], C, x[1], x[2], M, wd[2], wd[3], y[1], y[2], w.strides[0], w.strides[1],
                     w.dilations[0], w.dilations[1], w.pads[0], w.pads[1], group},
                    wsrc, epiAct, residual);
  return true;
}

}  // namespace kiln
