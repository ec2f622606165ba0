// Emit facets for RNN, GRU and LSTM: one checked call of kernels/ref/recurrent.h with the
// activations resolved (defaults, per-direction lists, alpha/beta consumed in order).
#include <cmath>
#include <map>

#include "emit_support.h"

namespace kiln {
namespace {

bool present(const Node& n, size_t i) {
  return i < n.numInputs() && n.input(i) != nullptr;
}
bool presentOut(const Node& n, size_t i) {
  return i < n.numOutputs() && n.output(i) != nullptr;
}

struct ActivationKind {
  int kind;
  int params;         ///< 0: none, 1: alpha, 2: alpha and beta
  float alpha, beta;  ///< defaults (NaN: must be given)
};

std::optional<ActivationKind> activationKind(const std::string& name) {
  static const std::map<std::string, ActivationKind> kinds = {
      {"Sigmoid", {0, 0, 0, 0}},
      {"Tanh", {1, 0, 0, 0}},
      {"Relu", {2, 0, 0, 0}},
      {"LeakyRelu", {3, 1, 0.01f, 0}},
      {"ThresholdedRelu", {4, 1, 1.0f, 0}},
      {"HardSigmoid", {5, 2, 0.2f, 0.5f}},
      {"Elu", {6, 1, 1.0f, 0}},
      {"Affine", {7, 2, NAN, NAN}},
      {"ScaledTanh", {8, 2, NAN, NAN}},
      {"Softsign", {9, 0, 0, 0}},
      {"Softplus", {10, 0, 0, 0}},
  };
  auto it = kinds.find(name);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

Status emitRecurrent(const Node& n, EmitContext& ctx) {
  const std::string& op = n.opType();
  const int gates = op == "RNN" ? 1 : (op == "GRU" ? 3 : 4);
  const int perDir = op == "RNN" ? 1 : (op == "GRU" ? 2 : 3);
  DType t = n.input(0)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} on {} tensors", op, dtypeName(t)));
  const std::string T(cTypeOf(t));
  for (size_t i : {1, 2, 3, 5, 6, 7})
    if (present(n, i) && n.input(i)->dtype() != t)
      return ctx.unsupported(fmt::format("{} with inputs of mixed types", op));
  if (present(n, 4) && n.input(4)->dtype() != DType::I32)
    return ctx.unsupported(fmt::format("{} with non-int32 sequence_lens", op));
  const int64_t layout = n.attrInt("layout", 0);
  auto x = staticDims(n.input(0)), w = staticDims(n.input(1)), r = staticDims(n.input(2));
  if (x.size() != 3 || w.size() != 3 || r.size() != 3 || (layout != 0 && layout != 1))
    return ctx.unsupported(fmt::format("{} with unexpected ranks or layout", op));
  const int64_t S = layout ? x[1] : x[0], B = layout ? x[0] : x[1], I = x[2];
  const int64_t D = w[0], H = r[2];
  const std::string dir = n.attrString("direction", "forward");
  if (w[1] != gates * H || w[2] != I || r[0] != D || r[1] != gates * H ||
      D != (dir == "bidirectional" ? 2 : 1))
    return ctx.unsupported(fmt::format("{} with W/R shapes that do not match", op));
  if (present(n, 3) && staticNumel(n.input(3)) != D * 2 * gates * H)
    return ctx.unsupported(fmt::format("{} with a bias of unexpected size", op));
  if (gates == 4 && present(n, 7) && staticNumel(n.input(7)) != D * 3 * H)
    return ctx.unsupported("LSTM with peepholes of unexpected size");

  // Activations: per direction; one list for bidirectional is repeated.
  std::vector<std::string> names;
  if (const Attribute* a = n.attr("activations"); a && a->kind() == AttrKind::Strings)
    names = a->strings();
  if (names.empty()) {
    for (int64_t d = 0; d < D; ++d) {
      if (gates == 1) names.push_back("Tanh");
      if (gates > 1) names.insert(names.end(), {"Sigmoid", "Tanh"});
      if (gates == 4) names.push_back("Tanh");
    }
  }
  if (int64_t(names.size()) == perDir && D == 2)
    names.insert(names.end(), names.begin(), names.end());
  if (int64_t(names.size()) != perDir * D)
    return ctx.unsupported(fmt::format("{} with {} activations", op, names.size()));
  auto alphaList = n.attrFloats("activation_alpha", {});
  auto betaList = n.attrFloats("activation_beta", {});
  size_t ai = 0, bi = 0;
  std::vector<int64_t> kinds;
  std::vector<float> alphas, betas;
  for (const auto& name : names) {
    auto k = activationKind(name);
    if (!k) return ctx.unsupported(fmt::format("{} activation '{}'", op, name));
    float a = k->alpha, b = k->beta;
    if (k->params >= 1 && ai < alphaList.size()) a = alphaList[ai++];
    if (k->params >= 2 && bi < betaList.size()) b = betaList[bi++];
    if (std::isnan(a) || std::isnan(b))
      return ctx.unsupported(fmt::format("{} activation '{}' without alpha/beta", op, name));
    kinds.push_back(k->kind);
    alphas.push_back(a);
    betas.push_back(b);
  }
  const float clip = n.hasAttr("clip") ? n.attrFloat("clip", 0.0f) : 0.0f;
  if (n.hasAttr("clip") && !(clip > 0)) return ctx.unsupported("clip that is not positive");

  auto in = [&](size_t i) {
    return present(n, i) ? ctx.input(i) : "static_cast<const " + T + "*>(nullptr)";
  };
  auto out = [&](size_t i) {
    return presentOut(n, i) ? ctx.output(i) : "static_cast<" + T + "*>(nullptr)";
  };
  const int64_t elemBytes = t == DType::F32 ? 4 : 8;
  const std::string scratch =
      fmt::format("reinterpret_cast<{}*>({})", T, ctx.scratch((gates + 3) * H * elemBytes));
  ctx.useHeader("kiln_ref/recurrent.h");
  callChecked(
      ctx, "kiln_ref::recurrent",
      fmt::format("kiln_ref::recurrent<{}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                  "{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})",
                  T, gates, S, B, I, H, D, dir == "reverse" ? 1 : 0, layout, ctx.input(0),
                  ctx.input(1), ctx.input(2), in(3),
                  present(n, 4) ? ctx.input(4) : "static_cast<const int32_t*>(nullptr)", in(5),
                  gates == 4 ? in(6) : "static_cast<const " + T + "*>(nullptr)",
                  gates == 4 ? in(7) : "static_cast<const " + T + "*>(nullptr)", perDir,
                  ctx.constArray(kinds), ctx.constFloatArray(alphas), ctx.constFloatArray(betas),
                  floatLiteral(clip), n.attrInt("linear_before_reset", 0) != 0 ? 1 : 0,
                  n.attrInt("input_forget", 0) != 0 ? 1 : 0, out(0), out(1),
                  gates == 4 ? out(2) : "static_cast<" + T + "*>(nullptr)", scratch));
  return Status();
}

}  // namespace

void attachRecurrentEmitters(OpRegistry& r) {
  r.setEmit("", "RNN", emitRecurrent);
  r.setEmit("", "GRU", emitRecurrent);
  r.setEmit("", "LSTM", emitRecurrent);
}

}  // namespace kiln
