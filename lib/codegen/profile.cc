// Profiling (kiln compile --profile): FLOP estimates per node, and the generated timing code
// and API. Without --profile none of it is compiled in.
#include <fmt/format.h>

#include "program.h"

namespace kiln {

int64_t estimateFlops(const Node& n) {
  auto dims = [](const Value* v) {
    return v && v->shape().isStatic() ? v->shape().staticDims() : std::vector<int64_t>{};
  };
  auto product = [](const std::vector<int64_t>& d, size_t from) {
    int64_t p = 1;
    for (size_t i = from; i < d.size(); ++i) p *= d[i];
    return p;
  };
  const std::string& op = n.opType();
  if (n.numOutputs() == 0 || !n.output(0)) return 0;
  auto y = dims(n.output(0));
  if (y.empty() && !n.output(0)->shape().isStatic()) return 0;
  if ((op == "Conv" || op == "FusedConv" || op == "NhwcConv") && n.numInputs() > 1) {
    auto w = dims(n.input(1));
    if (w.size() < 3) return 0;
    return 2 * product(y, 0) * product(w, 1);  // each output: C/group * kernel taps
  }
  if (op == "NhwcExpandDw" && n.numInputs() > 3) {  // the 1x1 conv, then the depthwise one
    auto x = dims(n.input(0)), w1 = dims(n.input(1)), wd = dims(n.input(3));
    if (x.size() != 4 || w1.size() != 4 || wd.size() != 4) return 0;
    return 2 * product(x, 0) * w1[0] + 2 * product(y, 0) * wd[2] * wd[3];
  }
  if (op == "NhwcDwProject" && n.numInputs() > 3) {  // the depthwise conv, then the 1x1 one
    auto wd = dims(n.input(1)), wp = dims(n.input(3));
    if (y.size() != 4 || wd.size() != 4 || wp.size() != 4) return 0;
    return 2 * product(y, 0) / y[3] * wp[1] * (wd[2] * wd[3] + y[3]);
  }
  if ((op == "ConvTranspose" || op == "FusedConvTranspose") && n.numInputs() > 1) {
    auto x = dims(n.input(0)), w = dims(n.input(1));
    if (x.size() < 3 || w.size() < 3) return 0;
    return 2 * product(x, 0) * product(w, 1) / std::max<int64_t>(n.attrInt("group", 1), 1);
  }
  if ((op == "Gemm" || op == "FusedGemm") && n.numInputs() > 1) {
    auto a = dims(n.input(0));
    if (a.size() != 2 || y.size() != 2) return 0;
    const int64_t K = n.attrInt("transA", 0) ? a[0] : a[1];
    return 2 * y[0] * y[1] * K;
  }
  if ((op == "MatMul" || op == "FusedMatMul") && n.numInputs() > 1) {
    auto a = dims(n.input(0));
    if (a.empty()) return 0;
    return 2 * product(y, 0) * a.back();
  }
  return product(y, 0);
}

}  // namespace kiln
