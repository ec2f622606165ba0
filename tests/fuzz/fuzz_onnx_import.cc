// libFuzzer target: ONNX ModelProto bytes → import → verify → shape inference → the -O3 passes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/verifier.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"
#include "kiln/passes/pass.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::OnnxImportOptions options;
  options.maxModelBytes = 1 << 20;  // keep each input cheap; limits are tested elsewhere
  options.maxTensorBytes = 1 << 20;
  options.maxNodes = 10'000;
  auto model = kiln::importOnnxBytes(std::string_view(reinterpret_cast<const char*>(data), size),
                                     "fuzz.onnx", "", options);
  if (!model.ok()) return 0;
  if (!kiln::verifyGraph(*model->graph).ok()) return 0;
  if (!kiln::inferShapes(*model->graph, kiln::OpRegistry::builtin()).ok()) return 0;
  // Passes must turn any model that imports and infers into a valid graph or a clear error.
  kiln::PassRunOptions passes;
  (void)kiln::runPasses(*model, kiln::pipelineFor(3), passes);
  return 0;
}
