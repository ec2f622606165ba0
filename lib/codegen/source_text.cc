// Escaping of model strings for generated source.
#include "source_text.h"

#include <fmt/format.h>

#include "kiln/ops/emit.h"

namespace kiln {

std::string commentSafe(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    bool printable = c >= 0x20 && c < 0x7f && c != '\\';
    if (c == '*' && i + 1 < s.size() && s[i + 1] == '/') printable = false;
    if (c == '/' && i + 1 < s.size() && (s[i + 1] == '*' || s[i + 1] == '/')) printable = false;
    if (printable)
      out.push_back(char(c));
    else
      out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

std::string cStringLiteral(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(char(c));
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?' avoids trigraphs
      out.push_back(char(c));
    } else {
      out += fmt::format("\\{:03o}", c);  // octal escapes end after 3 digits
    }
  }
  return out + "\"";
}

std::string identifierFrom(std::string_view s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "m_" + out;
  return out;
}

std::string constArrayDecl(const std::string& name, const std::vector<int64_t>& values) {
  return fmt::format("[[maybe_unused]] static const int64_t {}[] = {};", name,
                     intListLiteral(values.empty() ? std::vector<int64_t>{0} : values));
}

std::string constArrayDecl(const std::string& name, const std::vector<float>& values) {
  std::string list = "{";
  for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + floatLiteral(values[i]);
  if (values.empty()) list += "0.0f";
  return fmt::format("[[maybe_unused]] static const float {}[] = {}}};", name, list);
}

}  // namespace kiln
