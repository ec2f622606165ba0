// Ops from opsets 1-6: accepted where their old definition means what the current one does.
#include <algorithm>
#include <string_view>

#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

// Ops whose definitions before opset 7 compute what kiln's core op computes once the legacy
// `consumed_inputs` hint (memory reuse, no effect on results) is dropped; ops with attributes
// that old versions read differently are checked in checkLegacyAttributes. Others (Reshape-1's
// shape attribute, Concat-1's optional axis, Tile-1, BatchNormalization-6's spatial/is_test,
// Dropout-6, Upsample-1, ...) are refused with a pointer to the version converter.
constexpr std::string_view kSameMeaning[] = {"Abs",
                                             "Add",
                                             "And",
                                             "ArgMax",
                                             "ArgMin",
                                             "AveragePool",
                                             "Ceil",
                                             "Clip",
                                             "Constant",
                                             "Conv",
                                             "ConvTranspose",
                                             "DepthToSpace",
                                             "Div",
                                             "Elu",
                                             "Equal",
                                             "Exp",
                                             "Flatten",
                                             "Floor",
                                             "Gather",
                                             "Gemm",
                                             "GlobalAveragePool",
                                             "GlobalMaxPool",
                                             "Greater",
                                             "HardSigmoid",
                                             "Hardmax",
                                             "Identity",
                                             "InstanceNormalization",
                                             "LRN",
                                             "LeakyRelu",
                                             "Less",
                                             "Log",
                                             "LogSoftmax",
                                             "LpNormalization",
                                             "MatMul",
                                             "Max",
                                             "MaxPool",
                                             "Mean",
                                             "Min",
                                             "Mul",
                                             "Neg",
                                             "Not",
                                             "Or",
                                             "PRelu",
                                             "Pow",
                                             "Reciprocal",
                                             "ReduceL1",
                                             "ReduceL2",
                                             "ReduceLogSum",
                                             "ReduceLogSumExp",
                                             "ReduceMax",
                                             "ReduceMean",
                                             "ReduceMin",
                                             "ReduceProd",
                                             "ReduceSum",
                                             "ReduceSumSquare",
                                             "Relu",
                                             "Selu",
                                             "Shape",
                                             "Sigmoid",
                                             "Size",
                                             "Slice",
                                             "Softmax",
                                             "Softplus",
                                             "Softsign",
                                             "SpaceToDepth",
                                             "Sqrt",
                                             "Squeeze",
                                             "Sub",
                                             "Sum",
                                             "Tanh",
                                             "Transpose",
                                             "Unsqueeze",
                                             "Xor"};

// Binary ops before opset 7 broadcast only with broadcast=1 and an `axis` that aligns the second
// operand anywhere (not only at the end): that form is refused; without it shapes must match,
// which today's multidirectional broadcasting computes the same way.
constexpr std::string_view kLegacyBroadcast[] = {"Add", "And", "Div", "Equal", "Greater", "Less",
                                                 "Mul", "Or",  "Pow", "Sub",   "Xor"};

// Ops whose first definitions differ but whose definition from the given opset (still before 7)
// means what the current one does.
struct SameFrom {
  std::string_view op;
  int64_t since;
};
constexpr SameFrom kSameFrom[] = {{"Cast", 6},    {"Concat", 4}, {"Pad", 2},
                                  {"Reshape", 5}, {"Split", 2},  {"Tile", 6}};

bool contains(const auto& list, std::string_view op) {
  return std::find(std::begin(list), std::end(list), op) != std::end(list);
}

bool sameMeaning(std::string_view op, int64_t since) {
  if (contains(kSameMeaning, op)) return true;
  for (const auto& s : kSameFrom)
    if (s.op == op) return since >= s.since;
  return false;
}

}  // namespace

Status normalizeLegacyOpset(NodeSpec& n, NormalizeContext& nctx) {
  const std::string todo =
      "convert the model with onnx.version_converter.convert_version(model, 13)";
  if (!sameMeaning(n.opType, nctx.since()))
    return nctx.error(
        fmt::format("its definition from opset {} (before 7) is not supported", nctx.since()),
        todo);
  n.attrs.erase("consumed_inputs");
  if (contains(kLegacyBroadcast, n.opType)) {
    auto b = n.attrs.find("broadcast");
    if (b != n.attrs.end() && b->second.kind() == AttrKind::Int && b->second.i() != 0)
      return nctx.error("legacy broadcast=1 (opset before 7) is not supported", todo);
    n.attrs.erase("broadcast");
    n.attrs.erase("axis");
  }
  if (n.opType == "Gemm") n.attrs.erase("broadcast");  // C always broadcasts since opset 7
  return Status();
}

}  // namespace kiln::onnx_import
