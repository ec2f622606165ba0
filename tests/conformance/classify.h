// Classifies one ONNX node test by importing it with kiln and comparing inferred output types.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace kiln::conformance {

/// The result for one test. Categories:
///  - inferred:    every output's inferred dtype and static shape equal the expected output's,
///                 with the model's declared output types removed before inference;
///  - unsupported: a clear refusal (the message says "unsupported" and names an op of the
///                 test), or a test whose inputs/outputs are sequences or optionals;
///  - dynamic:     imported, but an output dim stays unknown because it depends on input
///                 values (detail says whether binding the test's input values resolves it);
///  - wrong:       a different static dtype/shape, an error that is not a clear refusal, or
///                 dims left unknown although input shapes and values determine them;
///  - crashed:     set by the runner for a signal, a timeout or a bad exit.
struct Outcome {
  std::string category;
  std::string message;
  std::string detail;  ///< a short machine-friendly sub-reason, e.g. "resolved-with-values"
};

/// Runs the checks on NODE_DIR/<test>; `info` is the test's manifest entry, or null.
Outcome classify(const std::filesystem::path& testDir, const nlohmann::json* info);

}  // namespace kiln::conformance
