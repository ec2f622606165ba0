// Making model-provided strings safe inside generated C/C++ source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Text safe inside a /* */ or // comment: printable ASCII only, no "*/", no newline;
/// other bytes become \xNN.
std::string commentSafe(std::string_view s);

/// A C string literal (with quotes) spelling exactly the bytes of s.
std::string cStringLiteral(std::string_view s);

/// An identifier: [A-Za-z0-9_] with others replaced by '_', not starting with a digit.
std::string identifierFrom(std::string_view s);

/// A file-scope `static const int64_t name[] = {...};` of values ({0} when empty), maybe unused
/// (an emitter may declare an array its chosen kernel then does not read).
std::string constArrayDecl(const std::string& name, const std::vector<int64_t>& values);
/// The same for floats, each written bit-exact ({0.0f} when empty).
std::string constArrayDecl(const std::string& name, const std::vector<float>& values);

}  // namespace kiln
