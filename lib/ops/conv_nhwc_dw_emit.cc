// Emission of kiln.NhwcConv's depthwise case onto kernels/cpu/conv_nhwc.h
// (depthwise_conv2d_nhwc_f32): the filter packed tap-major at compile time, and, where the
// conv's input dies at it, its output written over that input (outputShiftedOverInput).
#include <algorithm>

#include "cpu_emit_support.h"
#include "emit_support.h"

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
