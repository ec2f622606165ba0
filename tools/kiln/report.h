// `kiln compile --report`: what the optimizer did, as JSON or a self-contained HTML page.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/passes/pass.h"

namespace kiln::cli {

/// The report for `model` (already optimized) given the op histogram and node count before
/// the passes; HTML when `path` ends in .html, else JSON.
std::string optimizationReport(const Model& model, int64_t nodesBefore,
                               const std::map<std::string, int64_t>& opsBefore,
                               const std::vector<PassRecord>& passes, const std::string& path);

}  // namespace kiln::cli
