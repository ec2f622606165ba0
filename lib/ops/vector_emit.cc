// Element-wise f32 code on the vector forms of kernels/cpu/vfunctor.h: standalone activations
// and math ops, and fused element-wise chains (kiln.Elementwise), through eltwise.h's
// map_n_f32 / map_nest_f32. Ops whose scalar functor calls a libm function take vmath.h's
// approximations (bounds stated and tested there); the rest are bit-identical to kernels/ref.
#include "cpu_emit.h"
#include "cpu_emit_support.h"
#include "emit_support.h"
#include "kiln/ops/fused.h"
#include "shape_math.h"

namespace kiln {
namespace {

constexpr int64_t kMapChunk = 16384;  // eltwise.h's kMapChunk: elements per unit of work

/// The pool expression for `count` elements: none below two units of work (the threads would
/// wait longer to start than the loop runs).
std::string poolFor(EmitContext& ctx, int64_t count) {
  return count >= 2 * kMapChunk ? ctx.threadPool() : std::string("nullptr");
}

}  // namespace

std::string vectorCall(const Node& n, const std::vector<std::string>& args) {
  if (!elementwiseFusable(n)) return "";
  if (n.opType() == "Clip") {  // bounds are lanes too (a Splat when constant)
    return fmt::format("kiln_cpu::vclip({}, {}, {})", args[0],
                       args.size() > 1 ? args[1] : "kiln_cpu::V::set1(-__builtin_inff())",
                       args.size() > 2 ? args[2] : "kiln_cpu::V::set1(__builtin_inff())");
  }
  return fmt::format("kiln_cpu::vapply({}, {})", elementwiseFunctor(n), fmt::join(args, ", "));
}

Expected<bool> emitCpuVectorUnary(const Node& n, EmitContext& ctx) {
  if (!ctx.target().optimizedKernels()) return false;
  const std::string call = vectorCall(n, {"a"});
  if (call.empty() || n.numInputs() != 1) return false;
  const int64_t count = *n.output(0)->shape().numElements();
  if (count == 0) return false;
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader("kiln_ref/elementwise.h");
  ctx.useHeader("kiln_cpu/eltwise.h");
  const std::string out = ctx.outputInPlace(0, {0});
  ctx.call(cpu_detail::cpuKernel(cpu_kernels::Kernel::map_n_f32, ctx.target()),
           fmt::format("kiln_cpu::map_n_f32({}, {}, [](kiln_cpu::V::R a) {{ return {}; }}, {}, "
                       "kiln_cpu::Dense{{{}}});",
                       count, out, call, poolFor(ctx, count), ctx.input(0)));
  return true;
}

Expected<bool> emitCpuVectorChain(const Node& n, const Graph& body, EmitContext& ctx) {
  if (!ctx.target().optimizedKernels()) return false;
  const auto out = n.output(0)->shape().staticDims();
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  if (count == 0) return false;
  // The body as one vector function of its inputs; empty where an op has no vector form.
  const std::string lambda = bodyLambda(body, "kiln_cpu::V::R", vectorCall);
  if (lambda.empty()) return false;

  // Operands: scalar constants are Splats, the output's shape Dense, the rest Nested in a loop
  // nest of the collapsed broadcast (at most three levels, contiguous or broadcast innermost).
  std::vector<std::string> splat(n.numInputs());
  std::vector<size_t> dense, strided;
  std::vector<std::vector<int64_t>> stridedDims;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    const Tensor* t = ctx.value(i);
    if (t && t->numElements() == 1 && t->dtype() == DType::F32) {
      splat[i] = fmt::format("kiln_cpu::Splat{{{}}}", floatLiteral(t->data<float>()[0]));
    } else if (n.input(i)->shape().staticDims() == out) {
      dense.push_back(i);
    } else {
      strided.push_back(i);
      stridedDims.push_back(n.input(i)->shape().staticDims());
    }
  }
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader("kiln_ref/elementwise.h");
  ctx.useHeader("kiln_cpu/eltwise.h");
  std::vector<std::string> ops = splat;
  if (strided.empty()) {
    for (size_t i : dense) ops[i] = fmt::format("kiln_cpu::Dense{{{}}}", ctx.input(i));
    ctx.call(cpu_detail::cpuKernel(cpu_kernels::Kernel::map_n_f32, ctx.target()),
             fmt::format("kiln_cpu::map_n_f32({}, {}, {}, {}, {});", count, ctx.output(0), lambda,
                         poolFor(ctx, count), fmt::join(ops, ", ")));
    return true;
  }
  const BroadcastLoop loop = collapseBroadcast(out, stridedDims);
  if (loop.dims.size() > 3) return false;
  // Collapsed dim k goes to nest level pos[k]: the first outermost, the last innermost.
  static const std::vector<size_t> kPos[] = {{}, {2}, {0, 2}, {0, 1, 2}};
  const std::vector<size_t>& pos = kPos[loop.dims.size()];
  std::vector<int64_t> d(3, 1);
  for (size_t j = 0; j < loop.dims.size(); ++j) d[pos[j]] = loop.dims[j];
  for (size_t j = 0; j < strided.size(); ++j) {
    int64_t s[3] = {0, 0, 0};
    for (size_t l = 0; l < loop.dims.size(); ++l) s[pos[l]] = loop.strides[j][l];
    if (s[2] != 0 && s[2] != 1) return false;
    ops[strided[j]] =
        fmt::format("kiln_cpu::Nested<{}>{{{}, {}, {}}}", s[2], ctx.input(strided[j]), s[0], s[1]);
  }
  for (size_t i : dense)  // the output's own strides
    ops[i] = fmt::format("kiln_cpu::Nested<1>{{{}, {}, {}}}", ctx.input(i), d[1] * d[2], d[2]);
  ctx.call(cpu_detail::cpuKernel(cpu_kernels::Kernel::map_nest_f32, ctx.target()),
           fmt::format("kiln_cpu::map_nest_f32({}, {}, {}, {}, {}, {}, {});", d[0], d[1], d[2],
                       ctx.output(0), lambda, d[0] > 1 ? poolFor(ctx, count) : "nullptr",
                       fmt::join(ops, ", ")));
  return true;
}

}  // namespace kiln
