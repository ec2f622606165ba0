// Loading a model from any supported file (.onnx, .kiln), fixing input shapes, inferring types.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

struct LoadOptions {
  OnnxImportOptions onnx;
  /// --shape NAME=d0,d1,...: replaces the named graph input's dims (empty list: scalar).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Run verification and shape inference after loading.
  bool infer = true;
};

/// Loads .onnx or .kiln (by content: .kiln files start with the kiln magic), applies
/// inputShapes, verifies the graph, and infers every value's type.
Expected<Model> loadModel(const std::string& path, const LoadOptions& options = {});

/// Fixes graph input dims; errors name unknown inputs and rank mismatches. Symbolic dims
/// bound this way are substituted everywhere else the same symbol appears in the inputs.
Status applyInputShapes(Graph& g, const std::map<std::string, std::vector<int64_t>>& shapes);

/// Parses "NAME=d0,d1,..." (as given to --shape) into a map entry.
Status parseShapeFlag(const std::string& flag, std::map<std::string, std::vector<int64_t>>& out);

}  // namespace kiln
