// Names shared by the optimizer's fused ops (lib/ops/fused.cc) and the passes that make them.
#pragma once

namespace kiln {

/// Domain of ops only kiln's passes create.
inline constexpr const char* kKilnDomain = "kiln";
/// Attribute naming the activation fused into a FusedConv/FusedGemm/FusedMatMul ("Relu",
/// "Clip", ...; absent: none). Its parameters are the activation's own attributes prefixed
/// with "activation_" (activation_alpha, ...); Clip's bounds are activation_min/_max.
inline constexpr const char* kActivationAttr = "activation";
/// kiln.NhwcExpandDw's 1x1 conv keeps its activation attributes under this prefix
/// ("expand_activation", "expand_activation_min", ...).
inline constexpr const char* kExpandPrefix = "expand_";
/// kiln.NhwcDwProject's depthwise conv keeps its activation attributes under this prefix
/// ("dw_activation", "dw_activation_min", ...); the plain ones are the projection's.
inline constexpr const char* kDwPrefix = "dw_";

}  // namespace kiln

#include <string>
#include <vector>

namespace kiln {

class Node;

/// True when kiln.Elementwise can evaluate `n` per element: a single-output f32 op with a
/// kernels/ref scalar functor (arithmetic, unary math, activations, Clip).
bool elementwiseFusable(const Node& n);

/// The C++ expression applying `n`'s scalar functor to `args` (one per input).
std::string scalarCall(const Node& n, const std::vector<std::string>& args);
/// The kernels/ref functor of an element-wise fusable node other than Clip, with its attributes:
/// "kiln_ref::Elu{0x1p+0f}".
std::string elementwiseFunctor(const Node& n);

}  // namespace kiln
