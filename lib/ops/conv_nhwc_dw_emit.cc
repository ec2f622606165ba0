// Emission of kiln.NhwcConv's depthwise case onto kernels/cpu/conv_nhwc.h
// (depthwise_conv2d_nhwc_f32): the filter packed tap-major at compile time, and, where the
// conv's input dies at it, its output written over that input (outputShiftedOverInput); and of
// kiln.NhwcDwProject, the depthwise conv fused into the 1x1 projection that reads it
// (nhwc_dw_project_f32 in kernels/cpu/conv_nhwc_fused.h).
#include <algorithm>

#include "cpu_emit.h"
#include "cpu_emit_support.h"
#include "emit_support.h"
#include "kiln/ops/fused.h"

namespace kiln::cpu_detail {

std::string depthwiseNhwcWeights(EmitContext& ctx, const float* w, int64_t C, int64_t taps) {
  std::vector<float> packed(size_t(taps * C));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t) packed[size_t(t * C + c)] = w[c * taps + t];
  return ctx.derivedWeight(Tensor::fromVector(DType::F32, {taps * C}, packed));
}

namespace {

/// kiln_cpu::depthwise_nhwc_over_input_ok for s = [N, C, H, W, M, KH, KW, OH, OW, SH, SW, DH,
/// DW, PH, PW, group]: one image, stride 1, dilation 1, the output the input's size.
bool overInputOk(const std::vector<int64_t>& s) {
  return s[0] == 1 && s[9] == 1 && s[10] == 1 && s[11] == 1 && s[12] == 1 && s[7] == s[2] &&
         s[8] == s[3] && s[13] >= 0 && s[14] >= 0 && s[13] < s[5] && s[14] < s[6];
}

/// kiln_cpu::depthwise_nhwc_over_input_bands: one per thread, at most one per output row.
int64_t overInputBands(const std::vector<int64_t>& s, int threads) {
  return threads <= 1 ? 1 : std::min<int64_t>(threads, s[7]);
}

}  // namespace

void emitNhwcDepthwise(const Node& n, EmitContext& ctx, const std::vector<int64_t>& s,
                       const float* w, const std::string& act, const std::string& residual) {
  const std::string wp = depthwiseNhwcWeights(ctx, w, s[1], s[5] * s[6]);
  const std::string shape = fmt::format("kiln_cpu::Conv2dShape{{{}}}", fmt::join(s, ", "));
  const std::string bias = n.input(2) ? ctx.input(2) : nullFloat();
  const std::string kernel =
      cpuKernel(cpu_kernels::Kernel::depthwise_conv2d_nhwc_f32, ctx.target());
  useCpuHeaders(ctx, "kiln_cpu/conv_nhwc.h");
  // Over the input, shifted down by PH rows and PW pixels, where nothing reads the input after:
  // no buffer of its own (MobileNetV2's arena at 1 thread 3.21 -> 2.88 MB), and each output
  // line is one the conv has just read, not a line of memory it waits for (session 50).
  std::string y;
  const int64_t shift = (s[13] * s[3] + s[14]) * s[1];
  // At more than one thread, row bands pay where a band's KH rows computed aside and copied
  // are under 1/4 of it (kiln_cpu's depthwise_nhwc_over_input_pays). At 2 threads: MobileNetV2's
  // 28x28 convs (3 of 14 rows) 34 -> 21 us against out of place; PP-OCRv4 det's 40x40 5x5
  // ones (5 of 20) 1.1x slower than out of place. Else out of place: MobileNetV2's 14x14
  // ones took ~16 us over the input with the channels split, 12-13 us out of place (session
  // 55).
  const int64_t bands = overInputBands(s, ctx.threads());
  if (residual == nullFloat() && overInputOk(s) && (bands == 1 || s[7] > 4 * s[5] * bands))
    y = ctx.outputShiftedOverInput(0, 0, shift * int64_t(sizeof(float)));
  if (!y.empty()) {
    const int64_t floats = (bands - 1) * s[5] * s[8] * s[1];  // depthwise_nhwc_scratch_floats
    ctx.call(kernel,
             fmt::format("static_assert(kiln_cpu::depthwise_nhwc_over_input_ok({0}) && "
                         "kiln_cpu::depthwise_nhwc_over_input_pays({0}, {2}) && "
                         "kiln_cpu::depthwise_nhwc_shift_floats({0}) == {1} && "
                         "kiln_cpu::depthwise_nhwc_scratch_floats({0}, {2}) == {3}, \"kiln and "
                         "kiln_cpu disagree on the depthwise conv over its input\"); "
                         "kiln_cpu::depthwise_conv2d_nhwc_f32({0}, {4}, {5}, {6}, {7}, "
                         "kiln_cpu::make_epilogue({8}, {9}, {9}, {9}, 0), {10}, {11}, {2});",
                         shape, shift, ctx.threads(), floats, ctx.input(0), wp, bias, y, act,
                         nullFloat(), ctx.threadPool(), floatScratch(ctx, floats)));
    return;
  }
  ctx.call(kernel, fmt::format("kiln_cpu::depthwise_conv2d_nhwc_f32({}, {}, {}, {}, {}, "
                               "kiln_cpu::make_epilogue({}, {}, {}, {}, 0), {});",
                               shape, ctx.input(0), wp, bias, ctx.output(0), act, nullFloat(),
                               nullFloat(), residual, ctx.threadPool()));
}

}  // namespace kiln::cpu_detail

namespace kiln {

using cpu_detail::depthwiseNhwcWeights;

Expected<bool> emitCpuNhwcDwProject(const Node& n, EmitContext& ctx) {
  const Target& target = ctx.target();
  if (!target.optimizedKernels() || !allF32(n)) return false;
  const Tensor* wd = ctx.value(1);
  const Tensor* wp = ctx.value(3);
  if (!wd || !wp) return false;
  auto x = n.input(0)->shape().staticDims();
  auto wdd = n.input(1)->shape().staticDims();
  auto wpd = n.input(3)->shape().staticDims();
  auto y = n.output(0)->shape().staticDims();
  if (x.size() != 4 || wdd.size() != 4 || wpd.size() != 4 || y.size() != 4) return false;
  for (const auto* dims : {&x, &wdd, &wpd, &y})
    for (int64_t d : *dims)
      if (d <= 0) return false;
  const int64_t C = x[3], M = y[3];
  SlidingWindow w =
      slidingWindowOf(n, {x[0], C, x[1], x[2]}, {y[0], C, y[1], y[2]}, {wdd[2], wdd[3]});
  if (!w.valid() || n.attrInt("group", 1) != C || wdd[0] != C || wdd[1] != 1 || wpd[0] != M ||
      wpd[1] != C || wpd[2] != 1 || wpd[3] != 1)
    return false;
  // clang-format off
  const std::vector<int64_t> s = {x[0], C, x[1], x[2], C, wdd[2], wdd[3], y[1], y[2],
                                  w.strides[0], w.strides[1], w.dilations[0], w.dilations[1],
                                  w.pads[0], w.pads[1], C};
  // clang-format on
  const std::string wdp = depthwiseNhwcWeights(ctx, wd->data<float>(), C, wdd[2] * wdd[3]);
  const Tiles tiles = tilesFor(target);
  std::vector<float> panels = packBPanels(wp->data<float>(), C, M, 1, C, tiles);
  const std::string wpp =
      ctx.derivedWeight(Tensor::fromVector(DType::F32, {int64_t(panels.size())}, panels));
  // kiln_cpu::dw_project_scratch_floats: per thread, a band of the depthwise conv's output
  // rows (kiln_cpu::dw_project_bands: a multiple of the threads, of about the rows that fill 4
  // register strips).
  const int threads = ctx.threads();
  const int64_t rows = (4 * tiles.mr + s[8] - 1) / s[8], t = std::min<int64_t>(threads, s[7]);
  const int64_t bands = std::clamp<int64_t>(t * (((s[7] + t - 1) / t + rows - 1) / rows), 1, s[7]);
  const int64_t floats = (((s[7] + bands - 1) / bands) * s[8] * C + 15) / 16 * 16 * threads;
  const bool residual = n.numInputs() > 5 && n.input(5);
  // Over the residual where nothing later reads it, with one k block (gemm_f32_rowa_packed_b).
  const bool over = residual && oneKBlock(C);
  const std::string out = over ? ctx.outputOverInput(0, 5) : ctx.output(0);
  const std::string act1 =
      activationFunctorFor(n.attrString(std::string(kDwPrefix) + kActivationAttr, ""), n,
                           std::string(kDwPrefix) + "activation_");
  const std::string shape = fmt::format("kiln_cpu::Conv2dShape{{{}}}", fmt::join(s, ", "));
  useCpuHeaders(ctx, "kiln_cpu/conv_nhwc_fused.h");
  ctx.call(
      cpuKernel(cpu_kernels::Kernel::nhwc_dw_project_f32, target),
      tileCheck(target) + (over ? oneKBlockCheck(C) : std::string()) +
          fmt::format("static_assert(kiln_cpu::dw_project_scratch_floats({0}, {1}) == {2}, "
                      "\"kiln and kiln_cpu disagree on the depthwise+projection scratch\"); "
                      "kiln_cpu::nhwc_dw_project_f32({0}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, "
                      "kiln_cpu::make_epilogue({10}, {11}, {12}, {13}, {7}), {14}, {1}, "
                      "{15});",
                      shape, threads, floats, ctx.input(0), wdp,
                      n.input(2) ? ctx.input(2) : nullFloat(), act1, M, wpp, out,
                      activationOf(n, true), nullFloat(), n.input(4) ? ctx.input(4) : nullFloat(),
                      residual ? ctx.input(5) : nullFloat(), floatScratch(ctx, floats),
                      ctx.threadPool()));
  return true;
}

}  // namespace kiln
