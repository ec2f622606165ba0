// Models exercising every IR feature, shared by the textual IR and .kiln format tests.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::testing {

/// Names that stress quoting: quotes, backslashes, newlines, comment markers, non-UTF-8
/// bytes, keywords, sigils, and valid UTF-8.
std::vector<std::string> hostileNames();

/// A model with every feature of the IR: full metadata, inputs with static, symbolic and
/// unknown dims and unknown rank, initializers of every dtype (NaN payloads, -0, inf,
/// subnormals, odd-length int4), every attribute kind (incl. empty lists), If/Loop/Scan
/// subgraphs reading outer values two levels up, omitted optional inputs, annotations and
/// doc strings on nodes, values and graphs, and graph outputs that are an input and an
/// initializer. `bigElements` sets the size of one f32 initializer (to test hex and
/// external weights).
Model kitchenSinkModel(int64_t bigElements = 300);

/// A model whose value, node, graph, op, domain and attribute names are all hostile.
Model hostileNamesModel();

}  // namespace kiln::testing
