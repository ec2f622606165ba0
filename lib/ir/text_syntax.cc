// Quoting, float and integer literals, and hex for the textual IR.
#include "text_syntax.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <limits>

namespace kiln::textir {
namespace {

// Bit layout of the float dtypes: exponent and mantissa widths.
struct FloatLayout {
  int expBits, mantBits;
};

FloatLayout layoutOf(DType t) {
  switch (t) {
    case DType::F64:
      return {11, 52};
    case DType::F16:
      return {5, 10};
    case DType::BF16:
      return {8, 7};
    default:
      return {8, 23};
  }
}

// Length of the valid UTF-8 sequence at p (1..4), or 0 if the bytes there are not one.
size_t utf8Length(const unsigned char* p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if ((c & 0xe0) == 0xc0)
    len = 2, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0)
    len = 3, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3f);
  }
  static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

float floatFromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

uint32_t bitsOfFloat(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Appends ".0" when a decimal rendering would otherwise read back as an integer.
void makeFloatLooking(std::string& s) {
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
}

}  // namespace

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isIdentChar(char c) {
  return isIdentStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '$';
}
bool isBareNameChar(char c) {
  return isIdentChar(c) || c == '/' || c == '-';
}

bool isValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8Length(p + i, s.size() - i);
    if (!len) return false;
    i += len;
  }
  return true;
}

bool isBareName(std::string_view s) {
  if (s.empty() || s.find("//") != std::string_view::npos) return false;
  for (char c : s)
    if (!isBareNameChar(c)) return false;
  return true;
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || !isIdentStart(s[0])) return false;
  for (char c : s)
    if (!isIdentChar(c)) return false;
  return true;
}

void appendQuoted(std::string& out, std::string_view s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n", ++i;
    } else if (c == '\t') {
      out += "\\t", ++i;
    } else if (c == '\r') {
      out += "\\r", ++i;
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
      ++i;
    } else if (c < 0x80) {
      out += char(c);
      ++i;
    } else if (size_t len = utf8Length(p + i, n - i)) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
      ++i;
    }
  }
  out += '"';
}

void appendName(std::string& out, char sigil, std::string_view s) {
  out += sigil;
  if (isBareName(s))
    out += s;
  else
    appendQuoted(out, s);
}

void appendIdent(std::string& out, std::string_view s,
                 std::initializer_list<std::string_view> reserved) {
  bool bare = isIdentifier(s);
  for (std::string_view r : reserved)
    if (s == r) bare = false;
  if (bare)
    out += s;
  else
    appendQuoted(out, s);
}

std::string singleLine(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (u < 0x20 || u == 0x7f)
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

std::string quoteForMessage(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out;
  if (s.size() <= kMax) {
    appendQuoted(out, s);
    return out;
  }
  appendQuoted(out, s.substr(0, kMax));
  out.insert(out.size() - 1, "...");
  return out;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return floatFromBits(sign | 0x7f800000 | (mant << 13));
  if (exp != 0) return floatFromBits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return floatFromBits(sign);
  // Subnormal half: normalize into a float.
  int e = 113;
  while (!(mant & 0x400)) mant <<= 1, --e;
  return floatFromBits(sign | (uint32_t(e) << 23) | ((mant & 0x3ff) << 13));
}

uint16_t floatToHalf(float f) {
  uint32_t x = bitsOfFloat(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return uint16_t(sign | 0x7c00 | (mant ? (0x200 | (mant >> 13)) : 0));
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    int shift = 14 - e;
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // a carry rounds up to inf
  return uint16_t(sign | half);
}

float bf16ToFloat(uint16_t b) {
  return floatFromBits(uint32_t(b) << 16);
}

uint16_t floatToBf16(float f) {
  uint32_t x = bitsOfFloat(f);
  if ((x & 0x7f800000) == 0x7f800000 && (x & 0x7fffff))
    return uint16_t((x >> 16) | 0x40);  // keep NaN a NaN
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

void appendFloat(std::string& out, DType t, uint64_t bits) {
  FloatLayout l = layoutOf(t);
  uint64_t expMask = (uint64_t(1) << l.expBits) - 1, mantMask = (uint64_t(1) << l.mantBits) - 1;
  bool neg = (bits >> (l.expBits + l.mantBits)) & 1;
  uint64_t exp = (bits >> l.mantBits) & expMask, mant = bits & mantMask;
  if (exp == expMask) {
    if (neg) out += '-';
    if (mant == 0) {
      out += "inf";
    } else {
      out += "nan";
      if (mant != uint64_t(1) << (l.mantBits - 1))
        fmt::format_to(std::back_inserter(out), "(0x{:x})", mant);
    }
    return;
  }
  std::string s;
  if (t == DType::F64) {
    double d;
    std::memcpy(&d, &bits, 8);
    s = fmt::format("{}", d);
  } else if (t == DType::F32) {
    s = fmt::format("{}", floatFromBits(uint32_t(bits)));
  } else {
    // Shortest precision whose decimal reads back to the same 16-bit pattern.
    float f = t == DType::F16 ? halfToFloat(uint16_t(bits)) : bf16ToFloat(uint16_t(bits));
    for (int p = 1; p <= 9; ++p) {
      s = fmt::format("{:.{}g}", f, p);
      auto back = parseFloatBits(t, s);
      if (back.ok() && *back == bits) break;
    }
  }
  makeFloatLooking(s);
  out += s;
}

bool looksLikeFloat(std::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  if (text.starts_with("inf") || text.starts_with("nan")) return true;
  return text.find_first_of(".eE") != std::string_view::npos;
}

Expected<uint64_t> parseFloatBits(DType t, std::string_view text) {
  FloatLayout l = layoutOf(t);
  std::string_view body = text;
  bool neg = !body.empty() && body[0] == '-';
  if (neg) body.remove_prefix(1);
  uint64_t signBit = uint64_t(neg) << (l.expBits + l.mantBits);
  uint64_t expAll = ((uint64_t(1) << l.expBits) - 1) << l.mantBits;
  if (body == "inf") return signBit | expAll;
  if (body == "nan") return signBit | expAll | (uint64_t(1) << (l.mantBits - 1));
  if (body.starts_with("nan(0x") && body.ends_with(")")) {
    std::string_view hex = body.substr(6, body.size() - 7);
    uint64_t payload = 0;
    auto r = std::from_chars(hex.data(), hex.data() + hex.size(), payload, 16);
    if (hex.empty() || r.ec != std::errc() || r.ptr != hex.data() + hex.size() || payload == 0 ||
        payload >> l.mantBits)
      return makeError("NaN payload in '{}' must be non-zero and fit {} mantissa bits", text,
                       l.mantBits);
    return signBit | expAll | payload;
  }
  if (body.empty() || body[0] < '0' || body[0] > '9')
    return makeError("'{}' is not a {} number", text, dtypeName(t));
  const char* end = text.data() + text.size();
  if (t == DType::F64) {
    double d = 0;
    auto r = std::from_chars(text.data(), end, d);
    if (r.ptr != end || r.ec == std::errc::invalid_argument)
      return makeError("'{}' is not a {} number", text, dtypeName(t));
    if (r.ec != std::errc()) return makeError("'{}' is out of range for f64", text);
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
  }
  float f = 0;
  auto r = std::from_chars(text.data(), end, f);
  if (r.ptr != end || r.ec == std::errc::invalid_argument)
    return makeError("'{}' is not a {} number", text, dtypeName(t));
  if (r.ec != std::errc()) return makeError("'{}' is out of range for {}", text, dtypeName(t));
  if (t == DType::F32) return uint64_t(bitsOfFloat(f));
  uint16_t h = t == DType::F16 ? floatToHalf(f) : floatToBf16(f);
  if (((h >> l.mantBits) & ((1u << l.expBits) - 1)) == ((1u << l.expBits) - 1))
    return makeError("'{}' is out of range for {}", text, dtypeName(t));
  return uint64_t(h);
}

std::optional<int64_t> parseInt64(std::string_view text) {
  int64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) return {};
  return v;
}

Expected<uint64_t> parseIntBits(DType t, std::string_view text) {
  if (t == DType::Bool) {
    if (text == "true" || text == "1") return uint64_t(1);
    if (text == "false" || text == "0") return uint64_t(0);
    return makeError("'{}' is not a bool (true or false)", text);
  }
  int bits = dtypeBits(t);
  if (isSignedInteger(t)) {
    auto v = parseInt64(text);
    if (!v) return makeError("'{}' is not a {} integer", text, dtypeName(t));
    int64_t lo = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
    int64_t hi = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
    if (*v < lo || *v > hi) return makeError("{} is out of range for {}", text, dtypeName(t));
    return uint64_t(*v) & (bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1);
  }
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ptr != text.data() + text.size() || r.ec == std::errc::invalid_argument)
    return makeError("'{}' is not a {} integer", text, dtypeName(t));
  if (r.ec != std::errc() || (bits < 64 && v >> bits))
    return makeError("{} is out of range for {}", text, dtypeName(t));
  return v;
}

void appendHex(std::string& out, const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  size_t start = out.size();
  out.resize(start + 2 * size);
  char* p = out.data() + start;
  for (size_t i = 0; i < size; ++i) {
    p[2 * i] = kDigits[data[i] >> 4];
    p[2 * i + 1] = kDigits[data[i] & 0xf];
  }
}

std::optional<std::vector<uint8_t>> decodeHex(std::string_view hex) {
  if (hex.size() % 2) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = uint8_t(hi << 4 | lo);
  }
  return out;
}

}  // namespace kiln::textir
