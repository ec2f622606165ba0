// libFuzzer target: ONNX ModelProto bytes → import → verify → shape inference.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/verifier.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::OnnxImportOptions options;
  options.maxModelBytes = 1 << 20;  // keep each input cheap; limits are tested elsewhere
  options.maxTensorBytes = 1 << 20;
  auto model = kiln::importOnnxBytes(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx", "", options);
  if (!model.ok()) return 0;
  if (!kiln::verifyGraph(*model->graph).ok()) return 0;
  (void)kiln::inferShapes(*model->graph, kiln::OpRegistry::builtin());
  return 0;
}
