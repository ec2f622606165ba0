// libFuzzer target: bytes as a .kiln file and as an ONNX TensorProto .pb file (both readers take
// a path, so the input goes through a per-process temporary file).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/kiln_format.h"
#include "kiln/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/kiln-fuzz-" + std::to_string(getpid()) + ".bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  if (auto model = kiln::readKilnFile(path); model.ok()) (void)kiln::verifyGraph(*model->graph);
  (void)kiln::readTensorProtoFile(path);
  return 0;
}
