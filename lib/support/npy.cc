// .npy files: a strict parser for the header's Python dict literal, and a numpy-identical writer.
#include "kiln/support/npy.h"

#include <cstring>

#include "kiln/support/checked_math.h"
#include "kiln/support/file.h"

namespace kiln {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlign = 64;       // numpy's ARRAY_ALIGN: data starts on this boundary
constexpr size_t kMaxDims = 64;     // numpy allows at most 64 dims; more is a corrupt header
constexpr size_t kMaxString = 256;  // no type string we accept is anywhere near this long

/// A recursive-descent parser for the only dict numpy writes:
///   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
/// It accepts Python's spellings of that literal (either quote, any whitespace, trailing
/// commas, keys in any order) and nothing more: no escapes, no expressions, no nesting.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, bool allowLongSuffix)
      : text_(text), allowLongSuffix_(allowLongSuffix) {}

  Status parse(NpyArray& out) {
    bool seenDescr = false, seenOrder = false, seenShape = false;
    skipSpace();
    if (!consume('{')) return fail("expected '{' opening the header dict");
    skipSpace();
    while (!peek('}')) {
      auto key = parseString();
      if (!key.ok()) return key.status();
      skipSpace();
      if (!consume(':')) return fail("expected ':' after key '" + *key + "'");
      skipSpace();
      if (*key == "descr") {
        if (seenDescr) return fail("key 'descr' appears twice");
        seenDescr = true;
        if (peek('[') || peek('{'))
          return fail("structured (record) dtypes are not supported; save a plain numeric array");
        auto descr = parseString();
        if (!descr.ok()) return descr.status();
        out.descr = std::move(*descr);
      } else if (*key == "fortran_order") {
        if (seenOrder) return fail("key 'fortran_order' appears twice");
        seenOrder = true;
        if (consumeWord("True")) {
          out.fortranOrder = true;
        } else if (consumeWord("False")) {
          out.fortranOrder = false;
        } else {
          return fail("'fortran_order' must be True or False");
        }
      } else if (*key == "shape") {
        if (seenShape) return fail("key 'shape' appears twice");
        seenShape = true;
        KILN_RETURN_IF_ERROR(parseShape(out.shape));
      } else {
        return fail("unexpected key '" + *key +
                    "' (a .npy header has only descr, fortran_order "
                    "and shape)");
      }
      skipSpace();
      if (consume(',')) {
        skipSpace();
      } else if (!peek('}')) {
        return fail("expected ',' or '}' after the value of '" + *key + "'");
      }
    }
    consume('}');
    skipSpace();
    if (pos_ != text_.size()) return fail("unexpected text after the header dict");
    if (!seenDescr || !seenOrder || !seenShape)
      return fail("the header dict must have keys descr, fortran_order and shape");
    return Status();
  }

 private:
  Error fail(const std::string& what) const {
    return makeError("malformed .npy header at byte {}: {}", pos_, what);
  }
  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool consume(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool isDigit() const { return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  /// Matches a Python keyword, requiring that it is not the prefix of a longer name.
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    size_t after = pos_ + word.size();
    if (after < text_.size()) {
      char c = text_[after];
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
        return false;
    }
    pos_ = after;
    return true;
  }

  Expected<std::string> parseString() {
    if (!peek('\'') && !peek('"')) return fail("expected a quoted string");
    char quote = text_[pos_++];
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_];
      if (c == '\\') return fail("escape sequences are not supported in header strings");
      if (c == '\n' || c == '\r') return fail("unterminated string");
      if (pos_ - start >= kMaxString) return fail("string is too long");
      ++pos_;
    }
    if (pos_ >= text_.size()) return fail("unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }

  Expected<int64_t> parseDim() {
    if (peek('-')) return fail("negative dimension in shape");
    if (!isDigit()) return fail("expected a non-negative integer dimension");
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' &&
        text_[pos_ + 1] <= '9')
      return fail("dimension with a leading zero");
    int64_t value = 0;
    while (isDigit()) {
      auto next = checkedMul(value, 10);
      if (next) next = checkedAdd(*next, text_[pos_] - '0');
      if (!next) return fail("dimension does not fit in int64");
      value = *next;
      ++pos_;
    }
    // Python 2 wrote long integers as "3L"; numpy still reads such 1.0/2.0 headers.
    if (allowLongSuffix_) consume('L');
    return value;
  }

  Status parseShape(std::vector<int64_t>& shape) {
    shape.clear();
    if (!consume('(')) return fail("'shape' must be a tuple such as (2, 3), (5,) or ()");
    skipSpace();
    bool trailingComma = false;
    while (!peek(')')) {
      if (shape.size() >= kMaxDims) return fail("shape has more than 64 dimensions");
      auto dim = parseDim();
      if (!dim.ok()) return dim.status();
      shape.push_back(*dim);
      skipSpace();
      trailingComma = consume(',');
      skipSpace();
      if (!trailingComma && !peek(')')) return fail("expected ',' or ')' in shape");
    }
    consume(')');
    // "(3)" is the integer 3 in Python, not a tuple.
    if (shape.size() == 1 && !trailingComma)
      return fail("a one-dimensional shape needs a trailing comma, as in (3,)");
    return Status();
  }

  std::string_view text_;
  size_t pos_ = 0;
  bool allowLongSuffix_;
};

uint32_t readLittleEndian(std::string_view bytes, size_t at, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= uint32_t(uint8_t(bytes[at + i])) << (8 * i);
  return v;
}

void appendLittleEndian(std::string& out, uint32_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

/// A shape as Python writes a tuple: "(2, 3)", "(5,)", "()".
std::string shapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Expected<int64_t> expectedDataBytes(std::string_view descr, const std::vector<int64_t>& shape) {
  KILN_ASSIGN_OR_RETURN(int64_t itemSize, npyItemSize(descr));
  for (int64_t d : shape)
    if (d < 0) return makeError("negative dimension {} in .npy shape", d);
  auto elements = checkedProduct(shape);
  auto bytes = elements ? checkedMul(*elements, itemSize) : std::nullopt;
  if (!bytes) return makeError(".npy shape is too large: its byte size overflows int64");
  return *bytes;
}

}  // namespace

Expected<int64_t> npyItemSize(std::string_view descr) {
  if (descr.size() >= 2 && (descr[1] == 'O' || descr[0] == 'O'))
    return makeError(
        ".npy dtype '{}' holds pickled Python objects, which kiln never loads; save "
        "a numeric array",
        descr);
  static constexpr std::string_view kTypes[] = {"f2", "f4", "f8", "i1", "i2", "i4",
                                                "i8", "u1", "u2", "u4", "u8", "b1"};
  std::string_view body = descr.empty() ? descr : descr.substr(1);
  bool known = false;
  for (std::string_view t : kTypes) known = known || body == t;
  if (descr.size() != 3 || !known)
    return makeError(
        "unsupported .npy dtype '{}'; supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, "
        "little-endian",
        descr);
  int64_t size = body[1] - '0';
  char order = descr[0];
  if (size == 1) {
    if (order == '|' || order == '<' || order == '>' || order == '=') return size;
  } else {
    if (order == '<') return size;
    if (order == '>')
      return makeError(
          ".npy dtype '{}' is big-endian; convert it with "
          "array.astype(array.dtype.newbyteorder('<')) before saving",
          descr);
  }
  return makeError("unsupported byte order '{}' in .npy dtype '{}'; expected '<'", order, descr);
}

Expected<NpyArray> parseNpy(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic)
    return makeError("not a .npy file: it does not start with the \\x93NUMPY magic");
  uint8_t major = uint8_t(bytes[6]), minor = uint8_t(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return makeError("unsupported .npy format version {}.{}; kiln reads 1.0, 2.0 and 3.0", major,
                     minor);
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lengthWidth;
  if (bytes.size() < headerStart)
    return makeError("truncated .npy file: {} bytes, too short for the header length",
                     bytes.size());
  size_t headerLength = readLittleEndian(bytes, 8, lengthWidth);
  if (headerLength > bytes.size() - headerStart)
    return makeError("truncated .npy file: the header claims {} bytes but only {} follow",
                     headerLength, bytes.size() - headerStart);

  NpyArray array;
  HeaderParser parser(bytes.substr(headerStart, headerLength), /*allowLongSuffix=*/major < 3);
  KILN_RETURN_IF_ERROR(parser.parse(array));
  if (array.fortranOrder)
    return makeError(
        ".npy array is in Fortran order, which kiln does not read; save "
        "np.ascontiguousarray(array) instead");
  KILN_ASSIGN_OR_RETURN(int64_t dataBytes, expectedDataBytes(array.descr, array.shape));
  std::string_view data = bytes.substr(headerStart + headerLength);
  if (uint64_t(dataBytes) != data.size())
    return makeError(
        ".npy data is {} bytes but shape {} of '{}' needs {}; the file is truncated "
        "or corrupt",
        data.size(), shapeString(array.shape), array.descr, dataBytes);
  array.data.assign(data);
  return array;
}

Expected<NpyArray> readNpyFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, readFile(path));
  auto array = parseNpy(bytes);
  if (!array.ok()) return makeError("{}: {}", path, array.message());
  return array;
}

std::string encodeNpy(std::string_view descr, const std::vector<int64_t>& shape, const void* data,
                      size_t bytes) {
  // Byte-for-byte what numpy.save writes, so files compare equal to numpy's own.
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                 shapeString(shape));
  // numpy leaves room for the first dim to grow to 21 digits so it can rewrite it in place.
  if (!shape.empty()) {
    size_t digits = std::to_string(shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  size_t lengthWidth = 2;
  size_t withNewline = dict.size() + 1;
  size_t pad = kAlign - (kMagic.size() + 2 + lengthWidth + withNewline) % kAlign;
  if (withNewline + pad > 0xffff) {  // does not fit version 1.0's 16-bit length: use 2.0
    lengthWidth = 4;
    pad = kAlign - (kMagic.size() + 2 + lengthWidth + withNewline) % kAlign;
  }
  std::string out(kMagic);
  out.push_back(char(lengthWidth == 2 ? 1 : 2));
  out.push_back(0);
  appendLittleEndian(out, uint32_t(withNewline + pad), lengthWidth);
  out += dict;
  out.append(pad, ' ');
  out.push_back('\n');
  if (bytes > 0) out.append(static_cast<const char*>(data), bytes);
  return out;
}

Status writeNpyFile(const std::string& path, std::string_view descr,
                    const std::vector<int64_t>& shape, const void* data, size_t bytes) {
  auto expected = expectedDataBytes(descr, shape);
  if (!expected.ok()) return makeError("{}: {}", path, expected.message());
  if (uint64_t(*expected) != bytes)
    return makeError("{}: {} bytes of data given for shape {} of '{}', which needs {}", path, bytes,
                     shapeString(shape), descr, *expected);
  if (bytes > 0 && !data) return makeError("{}: no data given for {} bytes", path, bytes);
  std::string encoded = encodeNpy(descr, shape, data, bytes);
  return writeFile(path, encoded.data(), encoded.size());
}

Status writeNpyFile(const std::string& path, const NpyArray& array) {
  if (array.fortranOrder)
    return makeError("{}: kiln writes only C-order .npy arrays; reorder the data first", path);
  return writeNpyFile(path, array.descr, array.shape, array.data.data(), array.data.size());
}

}  // namespace kiln
