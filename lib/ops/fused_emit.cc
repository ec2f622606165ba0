// Code for kiln.Elementwise: one loop over the output that evaluates the fused body per
// element. On the optimized targets, when every op of the body has a vector form, the loop is
// vectorized (vector_emit.cc: the same vector forms the unfused ops take there); otherwise it
// runs the kernels/ref scalar functors the unfused reference ops use (artifacts build with
// -ffp-contract=off).
#include <algorithm>

#include "cpu_emit.h"
#include "cpu_emit_support.h"
#include "emit_support.h"
#include "kiln/ops/fused.h"
#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

const char* const kBinary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
const char* const kUnary[] = {"Neg",  "Abs", "Sqrt", "Exp", "Log",       "Floor",
                              "Ceil", "Sin", "Cos",  "Erf", "Reciprocal"};
const char* const kActivation[] = {
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu",
    "Elu",  "Selu",      "Celu",    "Softplus",    "Softsign",  "Mish", "ThresholdedRelu"};

template <size_t N>
bool in(const char* const (&table)[N], const std::string& op) {
  return std::find_if(std::begin(table), std::end(table), [&](const char* s) { return op == s; }) !=
         std::end(table);
}

}  // namespace

bool elementwiseFusable(const Node& n) {
  if (!n.domain().empty() || n.numOutputs() != 1 || !n.subgraphs().empty()) return false;
  const std::string& op = n.opType();
  size_t arity = 0;
  if (in(kBinary, op))
    arity = 2;
  else if (in(kUnary, op) || in(kActivation, op))
    arity = 1;
  else if (op == "Clip")
    arity = n.numInputs();
  else
    return false;
  if (n.numInputs() != arity || arity == 0) return false;
  for (const Value* v : n.inputs())
    if (!v || v->dtype() != DType::F32) return false;
  return n.output(0)->dtype() == DType::F32;
}

std::string scalarCall(const Node& n, const std::vector<std::string>& args) {
  const std::string& op = n.opType();
  if (op == "Clip") {
    std::string lo = args.size() > 1 ? args[1] : "kiln_ref::ClipBounds<float>::lowest()";
    std::string hi = args.size() > 2 ? args[2] : "kiln_ref::ClipBounds<float>::highest()";
    return fmt::format("kiln_ref::Clip<float>{{{}, {}}}({})", lo, hi, args[0]);
  }
  return fmt::format("{}({})", elementwiseFunctor(n), fmt::join(args, ", "));
}

std::string elementwiseFunctor(const Node& n) {
  const std::string& op = n.opType();
  return in(kActivation, op) ? activationFunctorFor(op, n, "") : "kiln_ref::" + op + "{}";
}

std::string bodyLambda(
    const Graph& body, const std::string& type,
    const std::function<std::string(const Node&, const std::vector<std::string>&)>& call) {
  // The body, in order: each node's result is a local.
  std::map<const Value*, std::string> name;
  std::string lambda = "[&](";
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    name[body.inputs()[i]] = fmt::format("a{}", i);
    lambda += fmt::format("{}{} a{}", i ? ", " : "", type, i);
  }
  lambda += fmt::format(") -> {} {{ ", type);
  int k = 0;
  for (const auto& bn : body.nodes()) {
    std::vector<std::string> args;
    for (const Value* v : bn->inputs()) {
      auto it = name.find(v);
      if (it == name.end()) return "";
      args.push_back(it->second);
    }
    const std::string expr = call(*bn, args);
    if (expr.empty()) return "";
    const std::string t = fmt::format("t{}", k++);
    lambda += fmt::format("const {} {} = {}; ", type, t, expr);
    name[bn->output(0)] = t;
  }
  return lambda + fmt::format("return {}; }}", name.at(body.outputs()[0]));
}

Status emitElementwise(const Node& n, EmitContext& ctx) {
  const Attribute* a = n.attr("body");
  if (!a || a->kind() != AttrKind::Graph || !a->g()) return ctx.unsupported("no body graph");
  const Graph& body = *a->g();
  if (n.output(0)->dtype() != DType::F32) return ctx.unsupported("a non-f32 fused chain");
  // On the optimized targets, the chain's vector form when every op has one.
  KILN_ASSIGN_OR_RETURN(bool vectorized, emitCpuVectorChain(n, body, ctx));
  if (vectorized) return Status();
  ctx.useHeader("kiln_ref/elementwise.h");
  ctx.useHeader("kiln_ref/activation.h");
  auto out = n.output(0)->shape().staticDims();
  int64_t count = 1;
  for (int64_t d : out) count *= d;

  // Operands: scalar constants become literals; the rest are read through pointers, by the
  // flat index when they have the output's shape, else through broadcast strides.
  std::vector<std::string> arg(n.numInputs());
  std::vector<size_t> strided;
  std::string decls;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    const Value* v = n.input(i);
    const Tensor* t = ctx.value(i);
    if (t && t->numElements() == 1 && t->dtype() == DType::F32) {
      arg[i] = floatLiteral(t->data<float>()[0]);
      continue;
    }
    decls += fmt::format("const float* p{} = {}; ", i, ctx.input(i));
    if (v->shape().staticDims() == out) {
      arg[i] = fmt::format("p{}[e]", i);
    } else {
      arg[i] = fmt::format("p{}[@{}]", i, strided.size());  // strided operand j's offset
      strided.push_back(i);
    }
  }
  const std::string lambda = bodyLambda(body, "float", scalarCall);
  if (lambda.empty()) return ctx.unsupported("a fused body that reads an outer value");
  std::string callArgs = fmt::format("{}", fmt::join(arg, ", "));
  std::string y = ctx.output(0);
  std::string stmt;
  constexpr int64_t kChunk = 16384;  // elements per thread's unit of work
  if (strided.empty() && ctx.target().optimizedKernels() && count >= 2 * kChunk) {
    // Split over the context's threads in fixed chunks: each element is still computed alone.
    ctx.useHeader("kiln_cpu/parallel.h");
    stmt = fmt::format(
        "{{ {}float* y = {}; auto f = {}; kiln_cpu::parallel_for({}, {}, [&](int64_t u, int) "
        "{{ const int64_t end = u * {} + {} < {} ? u * {} + {} : {}; for (int64_t e = u * {}; "
        "e < end; ++e) y[e] = f({}); }}); }}",
        decls, y, lambda, ctx.threadPool(), (count + kChunk - 1) / kChunk, kChunk, kChunk, count,
        kChunk, kChunk, count, kChunk, callArgs);
  } else if (strided.empty()) {
    stmt = fmt::format(
        "{{ {}float* y = {}; auto f = {}; for (int64_t e = 0; e < {}; ++e) y[e] = f({}); }}", decls,
        y, lambda, count, callArgs);
  } else {
    std::vector<std::vector<int64_t>> dims;
    for (size_t i : strided) dims.push_back(n.input(i)->shape().staticDims());
    BroadcastLoop loop = collapseBroadcast(out, dims);
    // At most 3 collapsed dims (a per-channel scale in NCHW or NHWC: [C, P] or [P, C]): a loop
    // nest with literal strides; else kiln_ref::for_each_index.
    stmt = broadcastLoopNest(ctx, loop, decls, y, lambda, callArgs);
    if (stmt.empty()) {
      std::string strides;
      for (size_t j = 0; j < strided.size(); ++j)
        strides += fmt::format("{}{}", j ? ", " : "", ctx.constArray(loop.strides[j]));
      const std::string indexed = substituteOffsets(
          callArgs, strided.size(), [](size_t j) { return fmt::format("o[{}]", j); });
      stmt = fmt::format(
          "{{ {}float* y = {}; auto f = {}; const int64_t* s[] = {{{}}}; int64_t e = 0; "
          "kiln_ref::for_each_index<{}>({}, {}, s, [&](const int64_t* o) {{ y[e] = f({}); ++e; "
          "}}); }}",
          decls, y, lambda, strides, strided.size(), loop.dims.size(), ctx.constArray(loop.dims),
          indexed);
    }
  }
  ctx.call("kiln::Elementwise", stmt);
  return Status();
}

/// kiln.Attention: kiln_cpu::attention_f32, each batch on one thread with per-thread scratch.
Status emitAttention(const Node& n, EmitContext& ctx) {
  auto q = n.input(0)->shape().staticDims(), kt = n.input(1)->shape().staticDims(),
       v = n.input(2)->shape().staticDims();
  const size_t r = q.size();
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) batch *= q[i];
  const int64_t S = q[r - 2], D = q[r - 1], Skv = kt[r - 1], Dv = v[r - 1];
  int64_t rowStride = 0, colStride = 0;
  std::string mask = "nullptr", batchOffsets = "nullptr";
  if (n.numInputs() > 3 && n.input(3)) {
    auto m = n.input(3)->shape().staticDims();
    m.insert(m.begin(), r - m.size(), 1);  // aligned with the scores [..., S, Skv]
    const int64_t cols = m.back();
    colStride = cols == 1 ? 0 : 1;
    rowStride = m[r - 2] != 1 ? cols : 0;
    mask = ctx.input(3);
    // Batch dims the mask does not broadcast over: each batch's mask offset, in batch order.
    std::vector<int64_t> offsets(size_t(batch), 0);
    bool any = false;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t rest = b, stride = m[r - 2] * m[r - 1], off = 0;
      for (size_t i = r - 2; i-- > 0;) {
        const int64_t idx = rest % q[i];
        rest /= q[i];
        if (m[i] != 1) off += idx * stride;
        stride *= m[i];
      }
      offsets[size_t(b)] = off;
      any = any || off != 0;
    }
    if (any) batchOffsets = ctx.constArray(offsets);
  }
  const std::string at = n.attrString("scale_at", "none");
  const int scaleAt = at == "q" ? 1 : at == "scores" ? 2 : 0;
  const int64_t perThread = attentionScratchFloats(S, Skv, D, Dv, ctx.target());
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader("kiln_cpu/attention.h");
  std::string shape =
      fmt::format("kiln_cpu::AttentionShape{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}", batch,
                  S, Skv, D, Dv, rowStride, colStride, floatLiteral(n.attrFloat("scale", 1.0f)),
                  scaleAt, n.attrInt("scale_divides", 0) != 0 ? "true" : "false", batchOffsets);
  ctx.call(
      cpu_detail::cpuKernel(cpu_kernels::Kernel::attention_f32, ctx.target()),
      fmt::format("static_assert(kiln_cpu::attention_scratch_floats({}, {}, {}, {}) == {}, "
                  "\"kiln and kiln_cpu disagree on the attention scratch\"); "
                  "kiln_cpu::attention_f32({}, {}, {}, {}, {}, {}, "
                  "reinterpret_cast<float*>({}), {});",
                  S, Skv, D, Dv, perThread, shape, ctx.input(0), ctx.input(1), ctx.input(2), mask,
                  ctx.output(0), ctx.scratch(4 * perThread * ctx.threads()), ctx.threadPool()));
  return Status();
}

void attachFusedEmitters(OpRegistry& r) {
  r.setEmit(kKilnDomain, "Elementwise", emitElementwise);
  r.setEmit(kKilnDomain, "Attention", emitAttention);
}

}  // namespace kiln
