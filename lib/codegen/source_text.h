// Making model-provided strings safe inside generated C/C++ source.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

/// Text safe inside a /* */ or // comment: printable ASCII only, no "*/", no newline;
/// other bytes become \xNN.
std::string commentSafe(std::string_view s);

/// A C string literal (with quotes) spelling exactly the bytes of s.
std::string cStringLiteral(std::string_view s);

/// An identifier: [A-Za-z0-9_] with others replaced by '_', not starting with a digit.
std::string identifierFrom(std::string_view s);

}  // namespace kiln
