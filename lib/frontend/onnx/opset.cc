// Since-versions of default-domain ONNX ops: libonnx's for opsets <= 17 (a table generated
// from its schemas at build time, tools/onnx_since), a table from the changelog beyond.
#include <algorithm>
#include <initializer_list>

#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

// The newest opset Debian's libonnx (1.12) has schemas for.
constexpr int64_t kLibOnnxMaxOpset = 17;

struct OpChanges {
  std::string_view op;
  std::initializer_list<int64_t> versions;  ///< opsets above 17 that (re)define the op
};

// Every op defined or redefined by opsets 18–21 (from the ONNX Changelog), sorted by name. An op
// absent here keeps its opset-17 definition.
constexpr OpChanges kNewerOpsets[] = {
    {"AffineGrid", {20}},
    {"AveragePool", {19}},
    {"BitwiseAnd", {18}},
    {"BitwiseNot", {18}},
    {"BitwiseOr", {18}},
    {"BitwiseXor", {18}},
    {"Cast", {19, 21}},
    {"CastLike", {19, 21}},
    {"CenterCropPad", {18}},
    {"Col2Im", {18}},
    {"Constant", {19, 21}},
    {"ConstantOfShape", {20, 21}},
    {"DFT", {20}},
    {"DeformConv", {19}},
    {"DequantizeLinear", {19, 21}},
    {"Equal", {19}},
    {"Flatten", {21}},
    {"Gelu", {20}},
    {"GridSample", {20}},
    {"GroupNormalization", {18, 21}},
    {"Identity", {19, 21}},
    {"If", {19, 21}},
    {"ImageDecoder", {20}},
    {"IsInf", {20}},
    {"IsNaN", {20}},
    {"Loop", {19, 21}},
    {"LpPool", {18}},
    {"Mish", {18}},
    {"OptionalGetElement", {18}},
    {"OptionalHasElement", {18}},
    {"Pad", {18, 19, 21}},
    {"QLinearMatMul", {21}},
    {"QuantizeLinear", {19, 21}},
    {"ReduceL1", {18}},
    {"ReduceL2", {18}},
    {"ReduceLogSum", {18}},
    {"ReduceLogSumExp", {18}},
    {"ReduceMax", {18, 20}},
    {"ReduceMean", {18}},
    {"ReduceMin", {18, 20}},
    {"ReduceProd", {18}},
    {"ReduceSumSquare", {18}},
    {"RegexFullMatch", {20}},
    {"Reshape", {19, 21}},
    {"Resize", {18, 19}},
    {"Scan", {19, 21}},
    {"ScatterElements", {18}},
    {"ScatterND", {18}},
    {"Shape", {19, 21}},
    {"Size", {19, 21}},
    {"Split", {18}},
    {"Squeeze", {21}},
    {"StringConcat", {20}},
    {"StringSplit", {20}},
    {"Transpose", {21}},
    {"Unsqueeze", {21}},
};

// Every op of the installed libonnx's default domain, by name, and the opsets <= 17 that
// (re)define it.
constexpr OpChanges kLibOnnxOps[] = {
#include "onnx_since_versions.inc"
};

// Both tables are sorted by name: looked up by binary search.
constexpr bool byName(const OpChanges& a, const OpChanges& b) {
  return a.op < b.op;
}
static_assert(std::is_sorted(std::begin(kNewerOpsets), std::end(kNewerOpsets), byName));
static_assert(std::is_sorted(std::begin(kLibOnnxOps), std::end(kLibOnnxOps), byName));

/// The newest of the op's versions in `table` that is at most `opset`; 0 when none is (or the
/// table lacks the op).
template <size_t N>
int64_t newestAtMost(const OpChanges (&table)[N], std::string_view op, int64_t opset) {
  const OpChanges* it =
      std::lower_bound(std::begin(table), std::end(table), op,
                       [](const OpChanges& c, std::string_view name) { return c.op < name; });
  int64_t best = 0;
  if (it != std::end(table) && it->op == op)
    for (int64_t v : it->versions)
      if (v <= opset) best = std::max(best, v);
  return best;
}

}  // namespace

int64_t onnxSinceVersion(const std::string& op, int64_t opset) {
  if (opset > kLibOnnxMaxOpset)
    if (int64_t v = newestAtMost(kNewerOpsets, op, opset)) return v;
  return newestAtMost(kLibOnnxOps, op, std::min(opset, kLibOnnxMaxOpset));
}

}  // namespace kiln::onnx_import
