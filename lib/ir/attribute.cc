// Attribute kind names.
#include "kiln/ir/attribute.h"

namespace kiln {

std::string_view attrKindName(AttrKind k) {
  static constexpr std::string_view kNames[] = {"int",    "float",  "string",  "tensor",
                                                "graph",  "ints",   "floats",  "strings",
                                                "tensors", "graphs"};
  return kNames[size_t(k)];
}

}  // namespace kiln
