// libFuzzer target: kiln's textual IR → parse → verify → print → parse again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/ir/text.h"
#include "kiln/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto model = kiln::parseModel(std::string_view(reinterpret_cast<const char*>(data), size),
                                "fuzz.kir");
  if (!model.ok()) return 0;
  (void)kiln::verifyGraph(*model->graph);
  return 0;
}
