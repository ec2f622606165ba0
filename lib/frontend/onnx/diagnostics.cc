// One-line, printable messages about nodes of untrusted models.
#include <fmt/format.h>

#include "onnx_import.h"

namespace kiln {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (with its code point), or 0.
size_t utf8Sequence(std::string_view s, size_t i, uint32_t& cp) {
  auto byte = [&](size_t k) { return uint8_t(s[k]); };
  uint8_t b0 = byte(i);
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte (excludes overlongs/surrogates)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    uint8_t b = byte(i + k);
    uint8_t kLo = k == 1 ? lo : 0x80, kHi = k == 1 ? hi : 0xBF;
    if (b < kLo || b > kHi) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return len;
}

// Escapes text for a one-line message; `quotes` also escapes ' and \\ (for quoted names).
std::string escapeText(std::string_view text, size_t maxBytes, bool quotes) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (out.size() >= maxBytes) {
      out += "...";
      break;
    }
    uint8_t c = uint8_t(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\\':
          out += quotes ? "\\\\" : "\\";
          break;
        case '\'':
          out += quotes ? "\\'" : "'";
          break;
        default:
          if (c < 0x20 || c == 0x7F)
            out += fmt::format("\\x{:02x}", c);
          else
            out += char(c);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t len = utf8Sequence(text, i, cp);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
      // C1 controls and Unicode line separators would break the one-line format.
      out += fmt::format("\\u{{{:04x}}}", cp);
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace

std::string printableName(std::string_view text, size_t maxBytes) {
  return escapeText(text, maxBytes, /*quotes=*/true);
}

namespace onnx_import {
std::string printableMessage(std::string_view text) {
  return escapeText(text, 2000, /*quotes=*/false);
}
}  // namespace onnx_import

std::string formatNodeMessage(const SourceNodeRef& where, std::string_view what,
                              std::string_view todo) {
  std::string_view domain =
      where.domain.empty() ? std::string_view("ai.onnx") : std::string_view(where.domain);
  std::string msg = fmt::format("{}: node '{}' ({}, {}, opset {}): {}", printableName(where.file),
                                printableName(where.node), printableName(where.opType),
                                printableName(domain), where.opset, what);
  if (!todo.empty()) msg += fmt::format(" \u2014 {}", todo);
  return msg;
}

}  // namespace kiln
