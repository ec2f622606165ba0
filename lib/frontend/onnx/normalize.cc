// Rewrites older ONNX op forms into kiln's core forms (newest-opset semantics), by table.
#include <climits>
#include <unordered_map>

#include "onnx_import.h"

namespace kiln::onnx_import {

Expected<std::string> NormalizeContext::addConstant(const std::string& base, Tensor t) {
  std::string name = freshName(base);
  auto v = g_.addInitializer(name, std::move(t));
  if (!v) return error(printableMessage(v.message()), "");
  return name;
}

namespace {

using NormalizeFn = Status (*)(NodeSpec& node, NormalizeContext& nctx);

// Removes and returns an attribute.
std::optional<Attribute> take(NodeSpec& n, const std::string& name) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return std::nullopt;
  Attribute a = std::move(it->second);
  n.attrs.erase(it);
  return a;
}

Error wrongKind(NormalizeContext& nctx, const std::string& attr, AttrKind want) {
  return nctx.error(fmt::format("attribute '{}' must be of kind {}", attr, attrKindName(want)),
                    "fix the attribute in the model");
}

void setInput(NodeSpec& n, size_t i, std::string name) {
  if (n.inputs.size() <= i) n.inputs.resize(i + 1);
  n.inputs[i] = std::move(name);
}

Expected<std::string> addInts(NormalizeContext& nctx, const NodeSpec& n, const char* what,
                              const std::vector<int64_t>& values) {
  return nctx.addConstant(n.name + "_" + what, Tensor::fromVector<int64_t>(
                                                   DType::I64, {int64_t(values.size())}, values));
}

// Moves an ints attribute into input `index` as an i64 initializer (absent: input omitted).
Status intsAttrToInput(NodeSpec& n, NormalizeContext& nctx, const std::string& attr, size_t index,
                       bool required) {
  std::optional<Attribute> a = take(n, attr);
  if (!a) {
    if (required)
      return nctx.error(fmt::format("required attribute '{}' is missing", attr),
                        "fix the node in the model");
    return Status();
  }
  if (a->kind() != AttrKind::Ints) return wrongKind(nctx, attr, AttrKind::Ints);
  if (n.inputs.size() > index)
    return nctx.error(
        fmt::format("has {} inputs; this opset takes '{}' as an attribute", n.inputs.size(), attr),
        "fix the node in the model");
  KILN_ASSIGN_OR_RETURN(std::string name, addInts(nctx, n, attr.c_str(), a->ints()));
  setInput(n, index, std::move(name));
  return Status();
}

// A scalar constant with the element type of value `like`: typed directly when the model
// declares that type, else an f32 constant cast by CastLike (folded later).
Expected<std::string> scalarLike(NormalizeContext& nctx, const NodeSpec& n, const char* what,
                                 const std::string& like, float value) {
  const TensorType* t = nctx.declaredType(like);
  std::string base = n.name + "_" + what;
  if (t && t->dtype == DType::F64)
    return nctx.addConstant(base, Tensor::scalar<double>(DType::F64, double(value)));
  KILN_ASSIGN_OR_RETURN(std::string c,
                        nctx.addConstant(base, Tensor::scalar<float>(DType::F32, value)));
  if (t && t->dtype == DType::F32) return c;
  std::string out = nctx.freshName(base + "_cast");
  nctx.emit(NodeSpec{.opType = "CastLike",
                     .name = n.name + "/CastLike_" + what,
                     .inputs = {c, like},
                     .outputs = {out}});
  return out;
}

// Rules that build constants "like" input 0 need it to be present.
Status requireDataInput(const NodeSpec& n, NormalizeContext& nctx) {
  if (n.inputs.empty() || n.inputs[0].empty())
    return nctx.error("has no data input (input 0)", "fix the node in the model");
  return Status();
}

Status axesToInput(NodeSpec& n, NormalizeContext& nctx) {
  return intsAttrToInput(n, nctx, "axes", 1, /*required=*/false);
}

Status splitToInput(NodeSpec& n, NormalizeContext& nctx) {
  if (nctx.since() < 13) KILN_RETURN_IF_ERROR(intsAttrToInput(n, nctx, "split", 1, false));
  // Without split sizes, Split-18 needs num_outputs; older Splits meant "as many as outputs".
  bool hasSplit = n.inputs.size() > 1 && !n.inputs[1].empty();
  if (!hasSplit && !n.attrs.count("num_outputs"))
    n.attrs["num_outputs"] = Attribute(int64_t(n.outputs.size()));
  return Status();
}

Status sliceToInputs(NodeSpec& n, NormalizeContext& nctx) {
  if (n.inputs.size() > 1)
    return nctx.error("has more than one input; Slice-1 takes starts/ends as attributes",
                      "fix the node in the model");
  // Order matters: axes (input 3) is checked before starts/ends occupy inputs 1 and 2.
  std::optional<Attribute> axes = take(n, "axes");
  KILN_RETURN_IF_ERROR(intsAttrToInput(n, nctx, "starts", 1, true));
  KILN_RETURN_IF_ERROR(intsAttrToInput(n, nctx, "ends", 2, true));
  if (axes) {
    if (axes->kind() != AttrKind::Ints) return wrongKind(nctx, "axes", AttrKind::Ints);
    KILN_ASSIGN_OR_RETURN(std::string name, addInts(nctx, n, "axes", axes->ints()));
    setInput(n, 3, std::move(name));
  }
  return Status();
}

Status padToInputs(NodeSpec& n, NormalizeContext& nctx) {
  KILN_RETURN_IF_ERROR(requireDataInput(n, nctx));
  KILN_RETURN_IF_ERROR(intsAttrToInput(n, nctx, "pads", 1, true));
  std::optional<Attribute> value = take(n, "value");
  if (value && value->kind() != AttrKind::Float) return wrongKind(nctx, "value", AttrKind::Float);
  if (value && value->f() != 0.0f) {  // 0 is the default constant_value
    KILN_ASSIGN_OR_RETURN(std::string c, scalarLike(nctx, n, "value", n.inputs[0], value->f()));
    setInput(n, 2, std::move(c));
  }
  return Status();
}

Status clipToInputs(NodeSpec& n, NormalizeContext& nctx) {
  KILN_RETURN_IF_ERROR(requireDataInput(n, nctx));
  if (n.inputs.size() > 1)
    return nctx.error("has more than one input; Clip-6 takes min/max as attributes",
                      "fix the node in the model");
  const char* names[] = {"min", "max"};
  for (size_t i = 0; i < 2; ++i) {
    std::optional<Attribute> a = take(n, names[i]);
    if (!a) continue;
    if (a->kind() != AttrKind::Float) return wrongKind(nctx, names[i], AttrKind::Float);
    KILN_ASSIGN_OR_RETURN(std::string c, scalarLike(nctx, n, names[i], n.inputs[0], a->f()));
    setInput(n, i + 1, std::move(c));
  }
  return Status();
}

Status topkToInput(NodeSpec& n, NormalizeContext& nctx) {
  std::optional<Attribute> k = take(n, "k");
  if (!k) return nctx.error("required attribute 'k' is missing", "fix the node in the model");
  if (k->kind() != AttrKind::Int) return wrongKind(nctx, "k", AttrKind::Int);
  KILN_ASSIGN_OR_RETURN(std::string name, addInts(nctx, n, "k", {k->i()}));
  n.inputs.resize(1);
  setInput(n, 1, std::move(name));
  return Status();
}

// Upsample and Resize-10 map pixels as Resize's "asymmetric" mode with floor rounding.
Status setLegacyResizeModes(NodeSpec& n, NormalizeContext& nctx) {
  std::string mode = "nearest";
  if (auto m = take(n, "mode")) {
    if (m->kind() != AttrKind::String) return wrongKind(nctx, "mode", AttrKind::String);
    mode = m->s() == "bilinear" ? "linear" : m->s();
  }
  if (mode != "nearest" && mode != "linear")
    return nctx.error(fmt::format("mode '{}' is not one of nearest, linear", printableName(mode)),
                      "fix the node in the model");
  n.attrs["mode"] = Attribute(mode);
  n.attrs["coordinate_transformation_mode"] = Attribute(std::string("asymmetric"));
  if (mode == "nearest") n.attrs["nearest_mode"] = Attribute(std::string("floor"));
  return Status();
}

Status upsampleToResize(NodeSpec& n, NormalizeContext& nctx) {
  std::string scales;
  if (nctx.since() < 9) {  // Upsample-7: scales attribute
    std::optional<Attribute> a = take(n, "scales");
    if (!a)
      return nctx.error("required attribute 'scales' is missing", "fix the node in the model");
    if (a->kind() != AttrKind::Floats) return wrongKind(nctx, "scales", AttrKind::Floats);
    KILN_ASSIGN_OR_RETURN(
        scales, nctx.addConstant(n.name + "_scales",
                                 Tensor::fromVector<float>(
                                     DType::F32, {int64_t(a->floats().size())}, a->floats())));
  } else if (n.inputs.size() >= 2) {
    scales = n.inputs[1];
  }
  n.opType = "Resize";
  n.inputs = {n.inputs.empty() ? std::string() : n.inputs[0], std::string(), scales};
  return setLegacyResizeModes(n, nctx);
}

Status resize10(NodeSpec& n, NormalizeContext& nctx) {
  std::string scales = n.inputs.size() >= 2 ? n.inputs[1] : std::string();
  n.inputs = {n.inputs.empty() ? std::string() : n.inputs[0], std::string(), scales};
  return setLegacyResizeModes(n, nctx);
}

// Softmax/LogSoftmax/Hardmax before 13 coerce the input to 2-D at `axis`: Flatten, apply
// along axis 1, and Reshape back to the input's shape.
Status coerced2D(NodeSpec& n, NormalizeContext& nctx) {
  int64_t axis = 1;
  if (auto a = take(n, "axis")) {
    if (a->kind() != AttrKind::Int) return wrongKind(nctx, "axis", AttrKind::Int);
    axis = a->i();
  }
  if (n.inputs.size() != 1 || n.outputs.size() != 1 || n.inputs[0].empty())
    return nctx.error("needs exactly one input and one output", "fix the node in the model");
  const TensorType* t = nctx.declaredType(n.inputs[0]);
  int64_t rank = t ? t->shape.rank() : -1;
  if (axis == -1 || (rank > 0 && axis == rank - 1)) {  // same as the single-axis form
    n.attrs["axis"] = Attribute(int64_t(-1));
    return Status();
  }
  std::string x = n.inputs[0], y = n.outputs[0];
  std::string shape = nctx.freshName(x + "_shape"), flat = nctx.freshName(x + "_2d"),
              out2d = nctx.freshName(y + "_2d");
  nctx.emit(
      NodeSpec{.opType = "Shape", .name = n.name + "/Shape", .inputs = {x}, .outputs = {shape}});
  NodeSpec flatten{
      .opType = "Flatten", .name = n.name + "/Flatten", .inputs = {x}, .outputs = {flat}};
  flatten.attrs["axis"] = Attribute(axis);
  nctx.emit(std::move(flatten));
  NodeSpec reshape{
      .opType = "Reshape", .name = n.name + "/Reshape", .inputs = {out2d, shape}, .outputs = {y}};
  reshape.attrs["allowzero"] = Attribute(int64_t(1));  // the shape holds real dims, zeros too
  nctx.emit(std::move(reshape));
  n.inputs = {flat};
  n.outputs = {out2d};
  n.attrs["axis"] = Attribute(int64_t(1));
  return Status();
}

Status batchNormInference(NodeSpec& n, NormalizeContext& nctx) {
  if (auto s = take(n, "spatial"); s && s->kind() == AttrKind::Int && s->i() == 0)
    return nctx.error("spatial=0 (per-activation statistics) is unsupported",
                      "re-export the model at opset 9 or newer");
  take(n, "is_test");
  take(n, "consumed_inputs");
  if (auto t = take(n, "training_mode"); t && t->kind() == AttrKind::Int && t->i() != 0) {
    // Opset 14+ training mode: normalizes with the batch statistics; outputs 1 and 2 are the
    // updated running mean and variance (deterministic, so kiln computes them).
    if (n.outputs.size() > 3)
      return nctx.error("training mode with more than 3 outputs", "fix the model");
    n.attrs["training_mode"] = Attribute(int64_t(1));
    return Status();
  }
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && nctx.isRead(n.outputs[i]))
      return nctx.error(fmt::format("output '{}' (training statistics) is used, but kiln runs "
                                    "BatchNormalization in inference form",
                                    printableName(n.outputs[i])),
                        "export the model in inference (eval) mode");
  n.outputs.resize(std::min<size_t>(n.outputs.size(), 1));
  return Status();
}

Status dropRatio(NodeSpec& n, NormalizeContext&) {
  take(n, "ratio");  // only matters in training
  take(n, "is_test");
  return Status();
}

Status dtypeAttr(NodeSpec& n, NormalizeContext& nctx, const std::string& attr) {
  auto it = n.attrs.find(attr);
  if (it == n.attrs.end()) return Status();
  if (it->second.kind() != AttrKind::Int) return wrongKind(nctx, attr, AttrKind::Int);
  int64_t code = it->second.i();
  std::optional<DType> dt =
      code >= 0 && code <= INT32_MAX ? dtypeFromOnnx(int32_t(code)) : std::nullopt;
  if (!dt)
    return nctx.error(
        fmt::format("attribute '{}' names data type {}, which kiln does not support", attr,
                    code <= INT32_MAX && code >= 0 ? onnxTypeName(int32_t(code))
                                                   : fmt::format("type {}", code)),
        "use a supported type");
  it->second = Attribute(std::string(dtypeName(*dt)));
  return Status();
}
// Before opset 19 ONNX's reference truncated float→bfloat16 (its node tests expect that);
// opset 19 specifies round to nearest even, kiln's default.
void truncateBf16BeforeOpset19(NodeSpec& n, const NormalizeContext& nctx) {
  if (nctx.since() < 19) n.attrs["round_mode"] = Attribute(std::string("truncate"));
}
Status castTo(NodeSpec& n, NormalizeContext& nctx) {
  KILN_RETURN_IF_ERROR(dtypeAttr(n, nctx, "to"));
  auto to = n.attrs.find("to");  // only casts to bf16 round differently
  if (to != n.attrs.end() && to->second.s() == dtypeName(DType::BF16))
    truncateBf16BeforeOpset19(n, nctx);
  return Status();
}
Status castLikeRounding(NodeSpec& n, NormalizeContext& nctx) {
  truncateBf16BeforeOpset19(n, nctx);
  return Status();
}
Status dtypeToName(NodeSpec& n, NormalizeContext& nctx) {
  return dtypeAttr(n, nctx, "dtype");
}

Status constantValue(NodeSpec& n, NormalizeContext& nctx) {
  if (n.attrs.size() != 1)
    return nctx.error(
        fmt::format("has {} attributes; a Constant needs exactly one value", n.attrs.size()),
        "fix the node in the model");
  const std::string name = n.attrs.begin()->first;  // copies: n.attrs is replaced below
  const Attribute a = n.attrs.begin()->second;
  auto need = [&](AttrKind k) -> Status {
    return a.kind() == k ? Status() : Status(wrongKind(nctx, name, k));
  };
  Tensor t;
  if (name == "value") {
    KILN_RETURN_IF_ERROR(need(AttrKind::Tensor));
    return Status();
  } else if (name == "value_float") {
    KILN_RETURN_IF_ERROR(need(AttrKind::Float));
    t = Tensor::scalar<float>(DType::F32, a.f());
  } else if (name == "value_floats") {
    KILN_RETURN_IF_ERROR(need(AttrKind::Floats));
    t = Tensor::fromVector<float>(DType::F32, {int64_t(a.floats().size())}, a.floats());
  } else if (name == "value_int") {
    KILN_RETURN_IF_ERROR(need(AttrKind::Int));
    t = Tensor::scalar<int64_t>(DType::I64, a.i());
  } else if (name == "value_ints") {
    KILN_RETURN_IF_ERROR(need(AttrKind::Ints));
    t = Tensor::fromVector<int64_t>(DType::I64, {int64_t(a.ints().size())}, a.ints());
  } else if (name == "value_string") {
    KILN_RETURN_IF_ERROR(need(AttrKind::String));
    t = std::move(Tensor::fromStrings({}, {a.s()})).value();
  } else if (name == "value_strings") {
    KILN_RETURN_IF_ERROR(need(AttrKind::Strings));
    t = std::move(Tensor::fromStrings({int64_t(a.strings().size())}, a.strings())).value();
  } else {
    return nctx.error(fmt::format("attribute '{}' is unsupported", printableName(name)),
                      "store the constant as a dense 'value' tensor");
  }
  n.attrs.clear();
  n.attrs["value"] = Attribute(std::move(t));
  return Status();
}

Status renameOnly(NodeSpec&, NormalizeContext&) {
  return Status();
}

Status gridSampleModes(NodeSpec& n, NormalizeContext&) {
  auto it = n.attrs.find("mode");
  if (it != n.attrs.end() && it->second.kind() == AttrKind::String) {
    if (it->second.s() == "bilinear") it->second = Attribute(std::string("linear"));
    if (it->second.s() == "bicubic") it->second = Attribute(std::string("cubic"));
  }
  return Status();
}

Status roiAlignMode(NodeSpec& n, NormalizeContext&) {
  // RoiAlign-10 sampled like the later "output_half_pixel" mode; 16 changed the default.
  if (!n.attrs.count("coordinate_transformation_mode"))
    n.attrs["coordinate_transformation_mode"] = Attribute(std::string("output_half_pixel"));
  return Status();
}

Status dftAxisToInput(NodeSpec& n, NormalizeContext& nctx) {
  int64_t axis = 1;  // DFT-17's default; DFT-20's default differs, so always pass it
  if (auto a = take(n, "axis")) {
    if (a->kind() != AttrKind::Int) return wrongKind(nctx, "axis", AttrKind::Int);
    axis = a->i();
  }
  KILN_ASSIGN_OR_RETURN(
      std::string name,
      nctx.addConstant(n.name + "_axis", Tensor::scalar<int64_t>(DType::I64, axis)));
  setInput(n, 2, std::move(name));
  return Status();
}

// GroupNormalization-18 takes a scale and bias per group, 21 per channel: repeat each group's
// value C/G times, Reshape(Expand(Unsqueeze(p, [1]), [G, C/G]), [-1]), with C from X's shape.
Status groupNormPerChannel(NodeSpec& n, NormalizeContext& nctx) {
  KILN_RETURN_IF_ERROR(requireDataInput(n, nctx));
  if (n.inputs.size() != 3 || n.inputs[1].empty() || n.inputs[2].empty())
    return nctx.error("needs inputs X, scale and bias", "fix the node in the model");
  auto g = n.attrs.find("num_groups");
  if (g == n.attrs.end() || g->second.kind() != AttrKind::Int || g->second.i() <= 0)
    return nctx.error("needs a positive integer attribute 'num_groups'",
                      "fix the node in the model");
  auto helper = [&](const char* op, std::vector<std::string> inputs, const std::string& tag) {
    std::string out = nctx.freshName(n.name + "_" + tag);
    nctx.emit(NodeSpec{
        .opType = op, .name = n.name + "/" + tag, .inputs = std::move(inputs), .outputs = {out}});
    return out;
  };
  std::string channels = helper("Shape", {n.inputs[0]}, "channels");
  nctx.emitted().back().attrs = {{"start", Attribute(int64_t(1))}, {"end", Attribute(int64_t(2))}};
  KILN_ASSIGN_OR_RETURN(std::string groups, addInts(nctx, n, "groups", {g->second.i()}));
  KILN_ASSIGN_OR_RETURN(std::string axes, addInts(nctx, n, "unsqueeze_axes", {1}));
  KILN_ASSIGN_OR_RETURN(std::string flat, addInts(nctx, n, "flat_shape", {-1}));
  std::string perGroup = helper("Div", {channels, groups}, "channels_per_group");
  std::string grid = helper("Concat", {groups, perGroup}, "repeat_shape");
  nctx.emitted().back().attrs = {{"axis", Attribute(int64_t(0))}};
  for (size_t i = 1; i <= 2; ++i) {
    std::string tag = i == 1 ? "scale" : "bias";
    std::string col = helper("Unsqueeze", {n.inputs[i], axes}, tag + "_col");
    std::string rep = helper("Expand", {col, grid}, tag + "_repeated");
    n.inputs[i] = helper("Reshape", {rep, flat}, tag + "_per_channel");
  }
  return Status();
}

struct NormalizeRule {
  std::string_view op;
  int64_t before;  ///< applies when the node's since-version is below this; 0: always
  NormalizeFn fn;
  std::string_view coreOp = {};  ///< the op it becomes, when renamed
};

constexpr NormalizeRule kRules[] = {
    {"Squeeze", 13, axesToInput},
    {"Unsqueeze", 13, axesToInput},
    {"ReduceSum", 13, axesToInput},
    {"ReduceL1", 18, axesToInput},
    {"ReduceL2", 18, axesToInput},
    {"ReduceLogSum", 18, axesToInput},
    {"ReduceLogSumExp", 18, axesToInput},
    {"ReduceMax", 18, axesToInput},
    {"ReduceMean", 18, axesToInput},
    {"ReduceMin", 18, axesToInput},
    {"ReduceProd", 18, axesToInput},
    {"ReduceSumSquare", 18, axesToInput},
    {"Split", 0, splitToInput},
    {"Slice", 10, sliceToInputs},
    {"Pad", 11, padToInputs},
    {"Clip", 11, clipToInputs},
    {"TopK", 10, topkToInput},
    {"Upsample", 0, upsampleToResize, "Resize"},
    {"Resize", 11, resize10},
    {"Softmax", 13, coerced2D},
    {"LogSoftmax", 13, coerced2D},
    {"Hardmax", 13, coerced2D},
    {"BatchNormalization", 0, batchNormInference},
    {"Dropout", 12, dropRatio},
    {"Cast", 0, castTo},
    {"CastLike", 19, castLikeRounding},
    {"EyeLike", 0, dtypeToName},
    {"RandomNormal", 0, dtypeToName},
    {"RandomUniform", 0, dtypeToName},
    {"RandomNormalLike", 0, dtypeToName},
    {"RandomUniformLike", 0, dtypeToName},
    {"Multinomial", 0, dtypeToName},
    {"Bernoulli", 0, dtypeToName},
    {"Constant", 0, constantValue},
    {"Scatter", 0, renameOnly, "ScatterElements"},
    {"GridSample", 20, gridSampleModes},
    {"RoiAlign", 16, roiAlignMode},
    {"DFT", 20, dftAxisToInput},
    {"Scan", 9, scan8ToLoops},
    {"GroupNormalization", 21, groupNormPerChannel},
};

const NormalizeRule* findRule(std::string_view op) {
  static const auto table = [] {
    std::unordered_map<std::string_view, const NormalizeRule*> m;
    for (const auto& r : kRules) m.emplace(r.op, &r);
    return m;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace

std::string_view coreOpName(std::string_view onnxOp) {
  const NormalizeRule* r = findRule(onnxOp);
  return r && !r->coreOp.empty() ? r->coreOp : onnxOp;
}

Expected<std::vector<NodeSpec>> normalizeNode(NodeSpec node, NormalizeContext& nctx) {
  // A definition older than opset 7 that opset-7 models no longer see (Relu-1, Add-6, ...): only
  // opset 1-6 models meet these, and only some mean what the current op means.
  if (nctx.where().opset < kLegacyOpsetEnd &&
      onnxSinceVersion(node.opType, kLegacyOpsetEnd) != nctx.since())
    KILN_RETURN_IF_ERROR(normalizeLegacyOpset(node, nctx));
  const NormalizeRule* rule = findRule(node.opType);
  if (rule) {
    if (!rule->coreOp.empty()) node.opType = std::string(rule->coreOp);
    if (rule->before == 0 || nctx.since() < rule->before)
      KILN_RETURN_IF_ERROR(rule->fn(node, nctx));
  }
  std::vector<NodeSpec> out;
  out.push_back(std::move(node));
  for (NodeSpec& extra : nctx.emitted()) out.push_back(std::move(extra));
  return out;
}

}  // namespace kiln::onnx_import
