// Tensor op family (definitions pending).
#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {

void registerTensorOps(OpRegistry& r) { (void)r; }

}  // namespace kiln
