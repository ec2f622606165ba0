// Counts a model's nodes on the protobuf wire, before parsing: a huge graph is refused
// before it costs the parser's memory (about 300 bytes per node) and time.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>

#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Field numbers of onnx.proto on the path ModelProto → GraphProto → NodeProto → AttributeProto
// → GraphProto.
constexpr int kModelGraph = 7;
constexpr int kGraphNode = 1;
constexpr int kNodeAttribute = 5;
constexpr int kAttributeGraph = 6;
constexpr int kAttributeGraphs = 11;

// Walks the wire format without building messages. Stops early, with what it has counted,
// when the bytes are malformed (the parser reports that) or when the count passes the limit.
class NodeCounter {
 public:
  NodeCounter(std::string_view bytes, int64_t limit, int maxDepth)
      : in_(reinterpret_cast<const uint8_t*>(bytes.data()), int(bytes.size())),
        limit_(limit),
        maxDepth_(maxDepth) {}

  int64_t count() {
    fields([&](int field) {
      return field == kModelGraph ? nested([&] { return graph(0); }) : skip();
    });
    return count_;
  }

 private:
  bool graph(int depth) {
    return fields([&](int field) {
      if (field != kGraphNode) return skip();
      if (++count_ > limit_) return false;
      // Deeper subgraphs are the parser's to refuse (its recursion limit).
      return depth >= maxDepth_ ? skip() : nested([&] { return node(depth); });
    });
  }

  bool node(int depth) {
    return fields([&](int field) {
      return field == kNodeAttribute ? nested([&] { return attribute(depth); }) : skip();
    });
  }

  bool attribute(int depth) {
    return fields([&](int field) {
      return field == kAttributeGraph || field == kAttributeGraphs
                 ? nested([&] { return graph(depth + 1); })
                 : skip();
    });
  }

  // Calls onField(field number) for each field up to the current limit; a length-delimited
  // field is left at its length for onField to read (nested) or skip.
  template <typename F>
  bool fields(F onField) {
    while (uint32_t tag = in_.ReadTag()) {
      tag_ = tag;
      bool delimited =
          WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
      if (!(delimited ? onField(WireFormatLite::GetTagFieldNumber(tag)) : skip())) return false;
    }
    return true;
  }

  bool skip() { return WireFormatLite::SkipField(&in_, tag_); }

  template <typename F>
  bool nested(F body) {
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length) || length > uint32_t(in_.BytesUntilLimit())) return false;
    CodedInputStream::Limit outer = in_.PushLimit(int(length));
    bool ok = body();
    in_.PopLimit(outer);
    return ok;
  }

  CodedInputStream in_;
  uint32_t tag_ = 0;
  int64_t count_ = 0;
  const int64_t limit_;
  const int maxDepth_;
};

}  // namespace

int64_t countNodesOnWire(std::string_view bytes, int64_t limit, int maxDepth) {
  return NodeCounter(bytes, limit, std::clamp(maxDepth, 0, 1000)).count();
}

Error tooManyNodes(const ImportContext& ctx) {
  return ctx.fail(
      fmt::format("model has more than {} nodes (subgraphs included)", ctx.options.maxNodes),
      "raise --max-nodes if the model is trusted (docs/limits.md)");
}

}  // namespace kiln::onnx_import
