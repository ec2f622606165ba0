// Helpers the unit and memory tests share. One definition here, not one per file: the test
// sources build as unity batches (CMAKE_UNITY_BUILD), where file-local copies would collide.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln {

/// An f32 tensor type of static dims.
inline TensorType f32(std::vector<int64_t> dims) {
  return {DType::F32, Shape::ofStatic(dims)};
}

/// Parses "f32[N,3,?]" ("[*]": unknown rank, "?": unknown dim, letters: a symbol).
inline TensorType parseType(const std::string& text) {
  size_t open = text.find('[');
  TensorType t;
  t.dtype = parseDType(text.substr(0, open)).value_or(DType::Undefined);
  std::string body = text.substr(open + 1, text.size() - open - 2);
  if (body == "*") return t;
  std::vector<Dim> dims;
  size_t start = 0;
  while (!body.empty() && start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string d = body.substr(start, comma == std::string::npos ? comma : comma - start);
    if (d == "?")
      dims.push_back(Dim::unknown());
    else if (d[0] >= '0' && d[0] <= '9')
      dims.push_back(Dim::known(std::stoll(d)));
    else
      dims.push_back(Dim::named(d));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  t.shape = Shape(std::move(dims));
  return t;
}

/// Whether `s` contains `part`.
inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Whether an inference result (see ops_nn_test_util.h's infer) is an error mentioning `text`.
inline bool failsWith(const std::string& result, const std::string& text) {
  return result.rfind("error: ", 0) == 0 && result.find(text) != std::string::npos;
}

}  // namespace kiln
