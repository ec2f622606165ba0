// Ops the optimizer creates (domain "kiln"): Conv/Gemm/MatMul with a fused epilogue, a fused
// chain of elementwise ops, and scaled-dot-product attention. Their types follow from the ops they replace.
#include "kiln/ops/fused.h"

#include <algorithm>
#include <set>
#include <string>

#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

/// Infers `base` (an ONNX op) on the first `count` inputs of the fused node.
Types inferAs(const InferContext& ctx, const char* base, size_t count) {
  const OpDef* def = OpRegistry::builtin().find("", base);
  if (!def) return ctx.error("no definition of {}", base);
  std::vector<TensorType> ins;
  std::vector<const Tensor*> vals;
  for (size_t i = 0; i < count && i < ctx.numInputs(); ++i) {
    ins.push_back(ctx.in(i));
    vals.push_back(ctx.value(i));
  }
  InferContext inner(ctx.node(), ins, vals, nullptr);
  return def->inferTypes(inner);
}

Status checkResidual(const InferContext& ctx, size_t i, const TensorType& out) {
  if (!ctx.has(i)) return Status();
  if (ctx.in(i).dtype != out.dtype || ctx.in(i).shape != out.shape)
    return ctx.error("the residual input {} must have the output's type {}", toString(ctx.in(i)),
                     toString(out));
  return Status();
}

std::vector<AttrSpec> epilogueAttrs(std::vector<AttrSpec> base) {
  for (AttrSpec a : {AttrSpec{kActivationAttr, AttrKind::String},
                     AttrSpec{"activation_alpha", AttrKind::Float},
                     AttrSpec{"activation_beta", AttrKind::Float},
                     AttrSpec{"activation_min", AttrKind::Float},
                     AttrSpec{"activation_max", AttrKind::Float},
                     AttrSpec{"activation_approximate", AttrKind::String}})
    base.push_back(a);
  return base;
}

/// Conv's and ConvTranspose's window attributes, plus `more`.
std::vector<AttrSpec> windowAttrs(std::vector<AttrSpec> more) {
  for (AttrSpec a : {AttrSpec{"auto_pad", AttrKind::String}, AttrSpec{"dilations", AttrKind::Ints},
                     AttrSpec{"group", AttrKind::Int}, AttrSpec{"kernel_shape", AttrKind::Ints},
                     AttrSpec{"pads", AttrKind::Ints}, AttrSpec{"strides", AttrKind::Ints}})
    more.push_back(a);
  return more;
}

/// A fused op's types: `base`'s on inputs 0-2, and input 3 (the residual) of the output's type.
Types inferFused(const InferContext& ctx, const char* base) {
  KILN_ASSIGN_OR_RETURN(auto outs, inferAs(ctx, base, 3));
  KILN_RETURN_IF_ERROR(checkResidual(ctx, 3, outs[0]));
  return outs;
}

// FusedConv(X, W, B?, R?): act(conv(X, W) + B + R).
struct FusedConvOp {
  static constexpr std::string_view kName = "FusedConv";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() { return {2, 4, 1, 1, epilogueAttrs(windowAttrs({}))}; }
  static Types inferTypes(const InferContext& ctx) { return inferFused(ctx, "Conv"); }
};

/// `s` with its axes permuted: result[i] = s[perm[i]] (rank-4 shapes only).
Shape permuted(const Shape& s, const int (&perm)[4]) {
  std::vector<Dim> d;
  for (int p : perm) d.push_back(s[size_t(p)]);
  return Shape(std::move(d));
}

// NhwcConv(X [N, H, W, C], W [M, C/group, KH, KW], B?, R? [N, OH, OW, M]): FusedConv on
// channels-last data, the form the layout pass gives the convs of an NHWC region. The
// weights keep ONNX's layout in the IR; the emitter packs them for the kernel. With
// nchw_input = 1, X is channels-first [N, C, H, W] (a conv whose output enters a region: it
// writes channels-last itself instead of through a Transpose).
struct NhwcConvOp {
  static constexpr std::string_view kName = "NhwcConv";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() {
    return {2, 4, 1, 1, epilogueAttrs(windowAttrs({{"nchw_input", AttrKind::Int}}))};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    if (!x.shape.rankKnown() || x.shape.rank() != 4)
      return ctx.error("the input {} must be a rank-4 [N, H, W, C] tensor", toString(x));
    static constexpr int kToNchw[4] = {0, 3, 1, 2}, kToNhwc[4] = {0, 2, 3, 1}, kSame[4] = {0, 1, 2, 3};
    const bool nchw = ctx.node().attrInt("nchw_input", 0) != 0;
    std::vector<TensorType> ins = {TensorType{x.dtype, permuted(x.shape, nchw ? kSame : kToNchw)}};
    std::vector<const Tensor*> vals = {nullptr};
    for (size_t i = 1; i < 3 && i < ctx.numInputs(); ++i) {
      ins.push_back(ctx.in(i));
      vals.push_back(ctx.value(i));
    }
    InferContext inner(ctx.node(), ins, vals, nullptr);
    const OpDef* conv = OpRegistry::builtin().find("", "Conv");
    if (!conv) return ctx.error("no definition of Conv");
    KILN_ASSIGN_OR_RETURN(auto outs, conv->inferTypes(inner));
    if (!outs[0].shape.rankKnown() || outs[0].shape.rank() != 4)
      return ctx.error("the output {} is not rank 4", toString(outs[0]));
    outs[0].shape = permuted(outs[0].shape, kToNhwc);
    KILN_RETURN_IF_ERROR(checkResidual(ctx, 3, outs[0]));
    return outs;
  }
};

/// epilogueAttrs' activation names with `prefix`: the activation of a fused node's other conv
/// (kiln.NhwcExpandDw's 1x1 conv under kExpandPrefix, kiln.NhwcDwProject's depthwise conv under
/// kDwPrefix). The names live as long as the process (AttrSpec holds a string_view).
std::vector<AttrSpec> prefixedActivationAttrs(std::string_view prefix, std::vector<AttrSpec> base) {
  static std::set<std::string, std::less<>> names;
  for (const AttrSpec& a : epilogueAttrs({}))
    base.push_back({*names.insert(std::string(prefix) + std::string(a.name)).first, a.kind});
  return base;
}

// NhwcExpandDw(X [N, H, W, Cin], W1 [C, Cin, 1, 1], B1 [C], Wd [C, 1, KH, KW], Bd [C]): a 1x1
// NhwcConv (its activation in the expand_* attributes) whose output only feeds a depthwise
// NhwcConv (the window and activation attributes), as one node: the fuse-nhwc-expand pass's
// form of MobileNetV2's expand + depthwise pair, which never stores the expanded tensor.
struct NhwcExpandDwOp {
  static constexpr std::string_view kName = "NhwcExpandDw";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() {
    return {5, 5, 1, 1, epilogueAttrs(windowAttrs(prefixedActivationAttrs(kExpandPrefix, {})))};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    const TensorType& w1 = ctx.in(1);
    if (!x.shape.rankKnown() || x.shape.rank() != 4)
      return ctx.error("the input {} must be a rank-4 [N, H, W, C] tensor", toString(x));
    if (!w1.shape.isStatic() || w1.shape.rank() != 4)
      return ctx.error("the 1x1 weights {} must be static and rank 4", toString(w1));
    const std::vector<int64_t> wd = w1.shape.staticDims();
    if (wd[2] != 1 || wd[3] != 1 || (x.shape[3].isStatic() && x.shape[3].value != wd[1]))
      return ctx.error("the 1x1 weights {} do not fit the input {}", toString(w1), toString(x));
    // The expanded tensor, then the depthwise conv on it.
    const TensorType e{x.dtype, Shape(std::vector<Dim>{x.shape[0], x.shape[1], x.shape[2],
                                                        Dim::known(wd[0])})};
    InferContext inner(ctx.node(), {e, ctx.in(3), ctx.in(4)},
                       {nullptr, ctx.value(3), ctx.value(4)}, nullptr);
    return NhwcConvOp::inferTypes(inner);
  }
};

// NhwcDwProject(X [N, H, W, C], Wd [C, 1, KH, KW], Bd [C], Wp [M, C, 1, 1], Bp [M],
// R? [N, OH, OW, M]): a depthwise NhwcConv (the window attributes; its activation in the dw_*
// attributes) whose output only feeds a 1x1 NhwcConv (the plain activation attributes, the
// residual R), as one node: the fuse-nhwc-project pass's form of MobileNetV2's depthwise +
// projection pair, which never stores the depthwise conv's output.
struct NhwcDwProjectOp {
  static constexpr std::string_view kName = "NhwcDwProject";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() {
    return {5, 6, 1, 1, epilogueAttrs(windowAttrs(prefixedActivationAttrs(kDwPrefix, {})))};
  }
  static Types inferTypes(const InferContext& ctx) {
    InferContext dw(ctx.node(), {ctx.in(0), ctx.in(1), ctx.in(2)},
                    {nullptr, ctx.value(1), ctx.value(2)}, nullptr);
    KILN_ASSIGN_OR_RETURN(auto d, NhwcConvOp::inferTypes(dw));
    const TensorType& wp = ctx.in(3);
    if (!wp.shape.isStatic() || wp.shape.rank() != 4)
      return ctx.error("the 1x1 weights {} must be static and rank 4", toString(wp));
    const std::vector<int64_t> w = wp.shape.staticDims();
    const Shape& ds = d[0].shape;
    if (w[2] != 1 || w[3] != 1 || !ds.rankKnown() || ds.rank() != 4 ||
        (ds[3].isStatic() && ds[3].value != w[1]))
      return ctx.error("the 1x1 weights {} do not fit the depthwise conv's output {}", toString(wp),
                       toString(d[0]));
    std::vector<TensorType> outs = {
        TensorType{d[0].dtype, Shape(std::vector<Dim>{ds[0], ds[1], ds[2], Dim::known(w[0])})}};
    KILN_RETURN_IF_ERROR(checkResidual(ctx, 5, outs[0]));
    return outs;
  }
};

// FusedConvTranspose(X, W, B?, R?): act(ConvTranspose(X, W, B) + R).
struct FusedConvTransposeOp {
  static constexpr std::string_view kName = "FusedConvTranspose";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() {
    return {2, 4, 1, 1,
            epilogueAttrs(windowAttrs({{"output_padding", AttrKind::Ints},
                                       {"output_shape", AttrKind::Ints}}))};
  }
  static Types inferTypes(const InferContext& ctx) { return inferFused(ctx, "ConvTranspose"); }
};

// FusedGemm(A, B, C?, R?): act(Gemm(A, B, C) + R).
struct FusedGemmOp {
  static constexpr std::string_view kName = "FusedGemm";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() {
    return {2, 4, 1, 1,
            epilogueAttrs({{"alpha", AttrKind::Float},
                           {"beta", AttrKind::Float},
                           {"transA", AttrKind::Int},
                           {"transB", AttrKind::Int}})};
  }
  static Types inferTypes(const InferContext& ctx) { return inferFused(ctx, "Gemm"); }
};

// FusedMatMul(A, B, bias?, R?): act(MatMul(A, B) + bias + R), bias [N] along the last axis.
struct FusedMatMulOp {
  static constexpr std::string_view kName = "FusedMatMul";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() { return {2, 4, 1, 1, epilogueAttrs({})}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(auto outs, inferAs(ctx, "MatMul", 2));
    if (ctx.has(2)) {
      const TensorType& b = ctx.in(2);
      const Shape& y = outs[0].shape;
      if (b.dtype != outs[0].dtype || !b.shape.rankKnown() || b.shape.rank() != 1 ||
          !y.rankKnown() || y.rank() < 1 || b.shape[0] != y[size_t(y.rank() - 1)])
        return ctx.error("the bias {} must be a vector of the output's last dim ({})",
                         toString(b), toString(outs[0]));
    }
    KILN_RETURN_IF_ERROR(checkResidual(ctx, 3, outs[0]));
    return outs;
  }
};

// Elementwise(inputs...) { body }: the body graph's nodes, applied per output element with
// the inputs broadcast to the output shape.
struct ElementwiseOp {
  static constexpr std::string_view kName = "Elementwise";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() { return {1, -1, 1, 1, {{"body", AttrKind::Graph, true}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const Attribute* a = ctx.node().attr("body");
    if (!a || a->kind() != AttrKind::Graph || !a->g()) return ctx.error("no body graph");
    Graph& body = *a->g();
    if (body.inputs().size() != ctx.numInputs() || body.outputs().size() != 1)
      return ctx.error("the body takes {} inputs and returns {} values; expected {} and 1",
                       body.inputs().size(), body.outputs().size(), ctx.numInputs());
    // Body inputs are scalars of the operands' element types; shapes broadcast outside.
    std::vector<TensorType> scalars;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      scalars.push_back(TensorType{ctx.in(i).dtype, Shape::scalar()});
      shapes.push_back(ctx.in(i).shape);
    }
    KILN_ASSIGN_OR_RETURN(auto outs, ctx.inferSubgraph(body, scalars));
    KILN_ASSIGN_OR_RETURN(Shape s, broadcastShapes(ctx, shapes));
    return single(outs[0].dtype, std::move(s));
  }
};

// Attention(Q [..., S, D], KT [..., D, Skv], V [..., Skv, Dv], mask? broadcastable to the
// scores [..., S, Skv] without growing them, e.g. [S, Skv] or [B, 1, 1, Skv]):
// softmax(scale(Q KT) + mask) V, the scale applied to Q or to the scores (attribute scale_at:
// "q", "scores" or "none"; scale_divides: divide by `scale` instead of multiplying).
struct AttentionOp {
  static constexpr std::string_view kName = "Attention";
  static constexpr std::string_view kDomain = kKilnDomain;
  static OpSchema schema() {
    return {3, 4, 1, 1,
            {{"scale", AttrKind::Float},
             {"scale_at", AttrKind::String},
             {"scale_divides", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    for (size_t i = 0; i < ctx.numInputs(); ++i)
      if (ctx.has(i) && (ctx.in(i).dtype != DType::F32 || !ctx.in(i).shape.isStatic()))
        return ctx.error("input {} is {}; Attention takes static f32 tensors", i,
                         toString(ctx.in(i)));
    std::string at = ctx.node().attrString("scale_at", "none");
    if (at != "q" && at != "scores" && at != "none")
      return ctx.error("scale_at is '{}'; use q, scores or none", at);
    auto q = ctx.in(0).shape.staticDims(), kt = ctx.in(1).shape.staticDims(),
         v = ctx.in(2).shape.staticDims();
    const size_t r = q.size();
    if (r < 2 || kt.size() != r || v.size() != r || q[r - 1] != kt[r - 2] ||
        kt[r - 1] != v[r - 2] || !std::equal(q.begin(), q.end() - 2, kt.begin()) ||
        !std::equal(q.begin(), q.end() - 2, v.begin()))
      return ctx.error("Q {}, KT {} and V {} do not make [..., S, D] x [..., D, Skv] x "
                       "[..., Skv, Dv] with equal batch dims",
                       toString(ctx.in(0).shape), toString(ctx.in(1).shape),
                       toString(ctx.in(2).shape));
    if (ctx.has(3)) {
      auto m = ctx.in(3).shape.staticDims();
      std::vector<int64_t> scores = q;  // [..., S, Skv]
      scores[r - 1] = kt[r - 1];
      bool fits = m.size() <= r;
      for (size_t i = 0; fits && i < m.size(); ++i)
        fits = m[i] == 1 || m[i] == scores[r - m.size() + i];
      if (!fits)
        return ctx.error("the mask {} must broadcast to the scores {} (each dim 1 or equal)",
                         toString(ctx.in(3).shape), toString(Shape::ofStatic(scores)));
    }
    std::vector<int64_t> y = q;
    y[r - 1] = v[r - 1];
    return single(DType::F32, Shape::ofStatic(y));
  }
};

}  // namespace

void registerFusedOps(OpRegistry& r) {
  r.add<AttentionOp>();
  r.add<FusedConvOp>();
  r.add<FusedConvTransposeOp>();
  r.add<FusedGemmOp>();
  r.add<FusedMatMulOp>();
  r.add<NhwcConvOp>();
  r.add<NhwcExpandDwOp>();
  r.add<NhwcDwProjectOp>();
  r.add<ElementwiseOp>();
}

}  // namespace kiln
