// Typed node attributes: scalars, strings, tensors, subgraphs, and lists of each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/ir/tensor.h"

namespace kiln {

class Graph;

enum class AttrKind : uint8_t { Int, Float, String, Tensor, Graph, Ints, Floats, Strings, Tensors, Graphs };

std::string_view attrKindName(AttrKind k);

/// One attribute value. Graph-valued attributes own their subgraph (shared on copy).
class Attribute {
 public:
  using GraphPtr = std::shared_ptr<Graph>;
  using Storage = std::variant<int64_t, float, std::string, Tensor, GraphPtr, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, std::vector<Tensor>,
                               std::vector<GraphPtr>>;

  Attribute() = default;
  explicit Attribute(int64_t v) : v_(v) {}
  explicit Attribute(float v) : v_(v) {}
  explicit Attribute(std::string v) : v_(std::move(v)) {}
  explicit Attribute(Tensor v) : v_(std::move(v)) {}
  explicit Attribute(GraphPtr v) : v_(std::move(v)) {}
  explicit Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}
  explicit Attribute(std::vector<float> v) : v_(std::move(v)) {}
  explicit Attribute(std::vector<std::string> v) : v_(std::move(v)) {}
  explicit Attribute(std::vector<Tensor> v) : v_(std::move(v)) {}
  explicit Attribute(std::vector<GraphPtr> v) : v_(std::move(v)) {}

  AttrKind kind() const { return AttrKind(v_.index()); }
  int64_t i() const { return std::get<int64_t>(v_); }
  float f() const { return std::get<float>(v_); }
  const std::string& s() const { return std::get<std::string>(v_); }
  const Tensor& t() const { return std::get<Tensor>(v_); }
  const GraphPtr& g() const { return std::get<GraphPtr>(v_); }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(v_); }
  const std::vector<float>& floats() const { return std::get<std::vector<float>>(v_); }
  const std::vector<std::string>& strings() const { return std::get<std::vector<std::string>>(v_); }
  const std::vector<Tensor>& tensors() const { return std::get<std::vector<Tensor>>(v_); }
  const std::vector<GraphPtr>& graphs() const { return std::get<std::vector<GraphPtr>>(v_); }
  const Storage& storage() const { return v_; }

 private:
  Storage v_;
};

}  // namespace kiln
