// Misc op family (definitions pending).
#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {

void registerMiscOps(OpRegistry& r) { (void)r; }

}  // namespace kiln
