// ai.onnx.preview.training optimizer ops (opset 1): Adagrad, Momentum, Adam. Each updates n
// tensors at once: inputs R, T, X1..Xn, G1..Gn, then each state (H or V, or V and H for Adam)
// for all n; outputs the new X1..Xn, then the new states in the same order.
#include "ref/training.h"

#include "dim_math.h"
#include "emit_support.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

/// The number of tensors a node updates, from its input count: 2 + (2 + states) * n.
Expected<size_t> updatedCount(const InferContext& ctx, size_t states) {
  const size_t group = 2 + states;
  const size_t ins = ctx.numInputs();
  if (ins < 2 + group || (ins - 2) % group != 0)
    return ctx.error("expects R, T and {} groups of X, G{}; got {} inputs", group,
                     states == 1 ? " and a state" : " and two states", ins);
  const size_t n = (ins - 2) / group;
  if (ctx.node().numOutputs() != (1 + states) * n)
    return ctx.error("updates {} tensors, so it has {} outputs, not {}", n, (1 + states) * n,
                     ctx.node().numOutputs());
  return n;
}

/// Checks R (float scalar), T (int64 scalar) and that every X, G and state of one tensor share
/// R's type and X's shape; returns the output types (new X's, then new states).
Types inferUpdate(const InferContext& ctx, size_t states) {
  KILN_ASSIGN_OR_RETURN(size_t n, updatedCount(ctx, states));
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (!ctx.has(i)) return ctx.error("input {} is missing; every input is required", i);
  const DType t = ctx.in(0).dtype;
  if (t != DType::F32 && t != DType::F64)
    return ctx.error("R must be f32 or f64, got {}", dtypeName(t));
  if (ctx.in(1).dtype != DType::I64)
    return ctx.error("T must be i64, got {}", dtypeName(ctx.in(1).dtype));
  for (size_t i = 0; i < 2; ++i) {
    const Shape& s = ctx.in(i).shape;
    if (s.rankKnown() && s.rank() > 0 && !(s.rank() == 1 && s[0] == Dim::known(1)))
      return ctx.error("{} must be a scalar, got {}", i == 0 ? "R" : "T", toString(s));
  }
  std::vector<TensorType> outs((1 + states) * n);
  for (size_t k = 0; k < n; ++k) {
    Shape shape = ctx.in(2 + k).shape;
    for (size_t role = 0; role < 2 + states; ++role) {
      const TensorType& in = ctx.in(2 + role * n + k);
      if (in.dtype != t)
        return ctx.error("input {} is {} but R is {}; kiln needs one float type", 2 + role * n + k,
                         dtypeName(in.dtype), dtypeName(t));
      if (!shape.rankKnown()) {
        shape = in.shape;
      } else if (in.shape.rankKnown()) {
        if (in.shape.rank() != shape.rank())
          return ctx.error("input {} has shape {}, expected {}", 2 + role * n + k,
                           toString(in.shape), toString(shape));
        for (size_t d = 0; d < size_t(shape.rank()); ++d) {
          auto u = unifyDim(shape[d], in.shape[d]);
          if (!u)
            return ctx.error("input {} has shape {}, expected {}", 2 + role * n + k,
                             toString(in.shape), toString(shape));
          shape.dims()[d] = *u;
        }
      }
    }
    for (size_t j = 0; j < 1 + states; ++j) outs[j * n + k] = {t, shape};
  }
  return outs;
}

/// Calls update(T{}, k, inputs of tensor k, outputs of tensor k) for each updated tensor k.
/// Inputs are X, G, states...; outputs are X_new, states_new....
template <size_t kStates, typename Update>
Tensors evaluateUpdate(const EvalContext& ctx, Update update) {
  const size_t n = (ctx.numInputs() - 2) / (2 + kStates);
  if (ctx.in(0).numElements() != 1 || ctx.in(1).numElements() != 1 ||
      ctx.in(1).dtype() != DType::I64)
    return ctx.error("R and T must be scalars");
  std::vector<Tensor> outs((1 + kStates) * n);
  auto run = [&](auto tag) -> Status {
    using T = decltype(tag);
    for (size_t k = 0; k < n; ++k) {
      const Tensor& x = ctx.in(2 + k);
      const T* in[2 + kStates];
      T* out[1 + kStates];
      for (size_t role = 0; role < 2 + kStates; ++role) {
        const Tensor& t = ctx.in(2 + role * n + k);
        if (t.dtype() != ctx.in(0).dtype() || t.dims() != x.dims())
          return ctx.error("input {} does not match X's type and shape", 2 + role * n + k);
        in[role] = t.data<T>();
      }
      for (size_t j = 0; j < 1 + kStates; ++j) {
        KILN_ASSIGN_OR_RETURN(outs[j * n + k], Tensor::zeros(x.dtype(), x.dims()));
        out[j] = outs[j * n + k].mutableData<T>();
      }
      update(ctx.in(0).data<T>(), ctx.in(1).data<int64_t>(), x.numElements(), in, out);
    }
    return Status();
  };
  if (ctx.in(0).dtype() == DType::F32)
    KILN_RETURN_IF_ERROR(run(float{}));
  else if (ctx.in(0).dtype() == DType::F64)
    KILN_RETURN_IF_ERROR(run(double{}));
  else
    return ctx.error("no evaluation for {}", dtypeName(ctx.in(0).dtype()));
  return outs;
}

/// Emits one kernel call per updated tensor: `kernel<T>(n, R, T, X, G, states..., <attrs>,
/// X_new, states_new...)` where attrs is the literal argument text between them.
Status emitUpdate(const Node& n, EmitContext& ctx, size_t states, const std::string& kernel,
                  const std::string& attrs) {
  const DType t = n.input(0)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(t)));
  const size_t count = (n.numInputs() - 2) / (2 + states);
  ctx.useHeader("kiln_ref/training.h");
  for (size_t k = 0; k < count; ++k) {
    std::string args =
        fmt::format("{}, {}, {}", staticNumel(n.input(2 + k)), ctx.input(0), ctx.input(1));
    for (size_t role = 0; role < 2 + states; ++role) args += ", " + ctx.input(2 + role * count + k);
    args += ", " + attrs;
    for (size_t j = 0; j < 1 + states; ++j) args += ", " + ctx.output(j * count + k);
    ctx.call(kernel, fmt::format("{}<{}>({});", kernel, cTypeOf(t), args));
  }
  return Status();
}

/// A double literal of a float attribute (the kernels compute in double).
std::string attrLiteral(const Node& n, const char* name, float dflt) {
  return fmt::format("double({})", floatLiteral(n.attrFloat(name, dflt)));
}

struct AdagradOp {
  static constexpr std::string_view kName = "Adagrad";
  static constexpr std::string_view kDomain = kTrainingDomain;
  static OpSchema schema() {
    return {5,
            -1,
            2,
            -1,
            {{"decay_factor", AttrKind::Float},
             {"epsilon", AttrKind::Float},
             {"norm_coefficient", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) { return inferUpdate(ctx, 1); }
  static Tensors evaluate(const EvalContext& ctx) {
    const Node& n = ctx.node();
    const double decay = n.attrFloat("decay_factor", 0), eps = n.attrFloat("epsilon", 1e-6f),
                 norm = n.attrFloat("norm_coefficient", 0);
    return evaluateUpdate<1>(ctx, [&](const auto* R, const int64_t* T, int64_t count,
                                      const auto* const* in, auto* const* out) {
      kiln_ref::adagrad(count, R, T, in[0], in[1], in[2], decay, eps, norm, out[0], out[1]);
    });
  }
  static Status emit(const Node& n, EmitContext& ctx) {
    return emitUpdate(
        n, ctx, 1, "kiln_ref::adagrad",
        fmt::format("{}, {}, {}", attrLiteral(n, "decay_factor", 0),
                    attrLiteral(n, "epsilon", 1e-6f), attrLiteral(n, "norm_coefficient", 0)));
  }
};

struct MomentumOp {
  static constexpr std::string_view kName = "Momentum";
  static constexpr std::string_view kDomain = kTrainingDomain;
  static OpSchema schema() {
    return {5,
            -1,
            2,
            -1,
            {{"alpha", AttrKind::Float, true},
             {"beta", AttrKind::Float, true},
             {"mode", AttrKind::String, true},
             {"norm_coefficient", AttrKind::Float, true}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    std::string mode = ctx.node().attrString("mode", "");
    if (mode != "standard" && mode != "nesterov")
      return ctx.error("mode '{}' is not 'standard' or 'nesterov'", mode);
    return inferUpdate(ctx, 1);
  }
  static Tensors evaluate(const EvalContext& ctx) {
    const Node& n = ctx.node();
    const double alpha = n.attrFloat("alpha", 0), beta = n.attrFloat("beta", 0),
                 norm = n.attrFloat("norm_coefficient", 0);
    const bool nesterov = n.attrString("mode", "") == "nesterov";
    return evaluateUpdate<1>(ctx, [&](const auto* R, const int64_t* T, int64_t count,
                                      const auto* const* in, auto* const* out) {
      kiln_ref::momentum(count, R, T, in[0], in[1], in[2], alpha, beta, norm, nesterov, out[0],
                         out[1]);
    });
  }
  static Status emit(const Node& n, EmitContext& ctx) {
    return emitUpdate(n, ctx, 1, "kiln_ref::momentum",
                      fmt::format("{}, {}, {}, {}", attrLiteral(n, "alpha", 0),
                                  attrLiteral(n, "beta", 0), attrLiteral(n, "norm_coefficient", 0),
                                  n.attrString("mode", "") == "nesterov" ? "true" : "false"));
  }
};

// ONNX's own test data for Adam without an epsilon attribute (test_adam_multiple) was made
// with 1e-2, while the spec's default is 1e-6: an omitted epsilon is ambiguous, so kiln asks
// for it rather than pick one.
constexpr const char* kNoEpsilon =
    "Adam without an 'epsilon' attribute (the spec's default 1e-6 and ONNX's reference test "
    "data disagree); set epsilon explicitly";

struct AdamOp {
  static constexpr std::string_view kName = "Adam";
  static constexpr std::string_view kDomain = kTrainingDomain;
  static OpSchema schema() {
    return {6,
            -1,
            3,
            -1,
            {{"alpha", AttrKind::Float},
             {"beta", AttrKind::Float},
             {"epsilon", AttrKind::Float},
             {"norm_coefficient", AttrKind::Float},
             {"norm_coefficient_post", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) { return inferUpdate(ctx, 2); }
  static Tensors evaluate(const EvalContext& ctx) {
    const Node& n = ctx.node();
    if (!n.hasAttr("epsilon")) return ctx.error("{}", kNoEpsilon);
    const double alpha = n.attrFloat("alpha", 0.9f), beta = n.attrFloat("beta", 0.999f),
                 eps = n.attrFloat("epsilon", 1e-6f), norm = n.attrFloat("norm_coefficient", 0),
                 post = n.attrFloat("norm_coefficient_post", 0);
    return evaluateUpdate<2>(ctx, [&](const auto* R, const int64_t* T, int64_t count,
                                      const auto* const* in, auto* const* out) {
      kiln_ref::adam(count, R, T, in[0], in[1], in[2], in[3], alpha, beta, eps, norm, post, out[0],
                     out[1], out[2]);
    });
  }
  static Status emit(const Node& n, EmitContext& ctx) {
    if (!n.hasAttr("epsilon")) return ctx.unsupported(kNoEpsilon);
    return emitUpdate(n, ctx, 2, "kiln_ref::adam",
                      fmt::format("{}, {}, {}, {}, {}", attrLiteral(n, "alpha", 0.9f),
                                  attrLiteral(n, "beta", 0.999f), attrLiteral(n, "epsilon", 1e-6f),
                                  attrLiteral(n, "norm_coefficient", 0),
                                  attrLiteral(n, "norm_coefficient_post", 0)));
  }
};

}  // namespace

void registerTrainingOps(OpRegistry& r) {
  r.add<AdagradOp>();
  r.add<MomentumOp>();
  r.add<AdamOp>();
}

}  // namespace kiln
