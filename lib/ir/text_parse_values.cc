// Textual IR parsing of tensor literals and attribute values.
#include <cstring>

#include "kiln/support/checked_math.h"
#include "text_parser.h"
#include "text_syntax.h"

namespace kiln::textir {
namespace {

std::string describeTensorType(DType d, const std::vector<int64_t>& dims) {
  std::string s(dtypeName(d));
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + ']';
}

std::optional<AttrKind> attrKindNamed(std::string_view name) {
  for (int k = 0; k <= int(AttrKind::Graphs); ++k)
    if (attrKindName(AttrKind(k)) == name) return AttrKind(k);
  return std::nullopt;
}

}  // namespace

Expected<Tensor> TextParser::parseTensor() {
  Token at = tok_;
  std::optional<DType> dtype;
  if (is(TokKind::Ident)) dtype = parseDType(tok_.text);
  if (!dtype) return expected("a tensor literal such as f32[2] [1.0, 2.0]");
  advance();
  KILN_RETURN_IF_ERROR(expect(TokKind::LBracket, "'[' after the element type"));
  std::vector<int64_t> dims;
  if (!is(TokKind::RBracket)) {
    do {
      std::optional<int64_t> d;
      if (is(TokKind::Number)) d = parseInt64(tok_.text);
      if (!d || *d < 0)
        return expected("a dimension size >= 0 (tensor literals have static shapes)");
      dims.push_back(*d);
      advance();
    } while (accept(TokKind::Comma));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the tensor shape"));
  if (*dtype == DType::Undefined) {
    // The empty placeholder tensor prints as `undefined[] []`.
    if (!dims.empty()) return errorAt(at, "an undefined tensor must be written undefined[] []");
    KILN_RETURN_IF_ERROR(expect(TokKind::LBracket, "'[' (an undefined tensor has no data: [])"));
    KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "']' (an undefined tensor has no data)"));
    return Tensor();
  }
  auto count = checkedProduct(dims);
  if (!count)
    return errorAt(at, fmt::format("tensor {} has more elements than fit in 64 bits",
                                   describeTensorType(*dtype, dims)));
  if (is(TokKind::Less))
    return errorAt(tok_,
                   "tensor data was elided when this IR was printed; print the model "
                   "without elideDataAbove to get text that can be parsed");
  if (isWord("hex")) {
    if (*dtype == DType::String)
      return errorAt(tok_, "string tensors take a list of strings, not hex");
    advance();
    if (!is(TokKind::String)) return expected("a quoted string of hex digits after 'hex'");
    auto bytes = decodeHex(tok_.text);
    if (!bytes) return errorAt(tok_, "hex data must be pairs of hex digits (0-9, a-f)");
    auto need = dtypeStorageBytes(*dtype, *count);
    if (!need || uint64_t(*need) != bytes->size())
      return errorAt(tok_, fmt::format("tensor {} needs {} bytes of data, the hex string has {}",
                                       describeTensorType(*dtype, dims),
                                       need ? std::to_string(*need) : "too many", bytes->size()));
    advance();
    return Tensor::fromBytes(*dtype, std::move(dims), bytes->data(), bytes->size());
  }
  if (!is(TokKind::LBracket)) return expected("tensor data: [values] or hex\"...\"");
  return parseTensorElements(*dtype, std::move(dims), *count);
}

Expected<Tensor> TextParser::parseTensorElements(DType dtype, std::vector<int64_t> dims,
                                                 int64_t count) {
  Token open = tok_;
  advance();  // '['
  auto tooMany = [&]() {
    return errorAt(tok_, fmt::format("tensor {} holds {} values; this is one too many",
                                     describeTensorType(dtype, dims), count));
  };
  int64_t n = 0;
  std::vector<std::string> strings;
  std::vector<uint8_t> bytes;
  int bits = dtypeBits(dtype);
  if (!is(TokKind::RBracket)) {
    do {
      if (n >= count) return tooMany();
      if (dtype == DType::String) {
        if (!is(TokKind::String)) return expected("a quoted string element");
        strings.push_back(std::move(tok_.text));
      } else {
        bool ok = dtype == DType::Bool ? (is(TokKind::Number) || isWord("true") || isWord("false"))
                                       : atNumber();
        if (!ok) return expected(fmt::format("a {} element", dtypeName(dtype)));
        auto v = isFloat(dtype) ? parseFloatBits(dtype, tok_.text) : parseIntBits(dtype, tok_.text);
        if (!v) return errorAt(tok_, v.message());
        if (bits == 4) {
          if (n % 2 == 0)
            bytes.push_back(uint8_t(*v & 0xf));
          else
            bytes.back() = uint8_t(bytes.back() | (*v & 0xf) << 4);
        } else {
          for (int k = 0; k < bits / 8; ++k) bytes.push_back(uint8_t(*v >> (8 * k)));
        }
      }
      ++n;
      advance();
    } while (accept(TokKind::Comma));
  }
  KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the tensor data"));
  if (n != count)
    return errorAt(open, fmt::format("tensor {} needs {} values, got {}",
                                     describeTensorType(dtype, dims), count, n));
  if (dtype == DType::String) return Tensor::fromStrings(std::move(dims), std::move(strings));
  return Tensor::fromBytes(dtype, std::move(dims), bytes.data(), bytes.size());
}

Status TextParser::parseAttributes(Graph& owner, int depth,
                                   std::map<std::string, Attribute>& attrs) {
  advance();  // '{'
  if (!is(TokKind::RBrace)) {
    do {
      if (!is(TokKind::Ident) && !is(TokKind::String)) return expected("an attribute name");
      Token key = tok_;
      advance();
      KILN_RETURN_IF_ERROR(expect(TokKind::Equal, "'=' after the attribute name"));
      KILN_ASSIGN_OR_RETURN(Attribute a, parseAttrValue(owner, depth));
      if (!attrs.emplace(key.text, std::move(a)).second)
        return errorAt(key, fmt::format("attribute {} is given twice", quoteForMessage(key.text)));
    } while (accept(TokKind::Comma));
  }
  return expect(TokKind::RBrace, "',' or '}' in the attributes");
}

Expected<Attribute> TextParser::parseAttrValue(Graph& owner, int depth) {
  Token at = tok_;
  // Reads an optional ": kind" suffix; it is required for empty lists.
  auto suffix = [&]() -> Expected<std::optional<AttrKind>> {
    if (!accept(TokKind::Colon)) return std::optional<AttrKind>();
    std::optional<AttrKind> k;
    if (is(TokKind::Ident)) k = attrKindNamed(tok_.text);
    if (!k) return expected("an attribute kind (int, float, string, tensor, graph, ints, ...)");
    advance();
    return k;
  };
  auto checked = [&](Attribute a) -> Expected<Attribute> {
    KILN_ASSIGN_OR_RETURN(auto want, suffix());
    if (want && *want != a.kind())
      return errorAt(at, fmt::format("the value is {} but its kind suffix says {}",
                                     attrKindName(a.kind()), attrKindName(*want)));
    return a;
  };
  bool isDTypeWord = is(TokKind::Ident) && parseDType(tok_.text).has_value();
  if (!accept(TokKind::LBracket)) {
    if (atNumber()) {
      std::vector<Token> items{tok_};
      advance();
      KILN_ASSIGN_OR_RETURN(auto want, suffix());
      return numericAttr(items, false, want);
    }
    if (is(TokKind::String)) {
      std::string s = std::move(tok_.text);
      advance();
      return checked(Attribute(std::move(s)));
    }
    if (isWord("graph")) {
      KILN_ASSIGN_OR_RETURN(auto g, parseGraph(&owner, depth + 1));
      return checked(Attribute(std::move(g)));
    }
    if (isDTypeWord) {
      KILN_ASSIGN_OR_RETURN(Tensor t, parseTensor());
      return checked(Attribute(std::move(t)));
    }
    return expected("an attribute value (number, string, tensor, graph or [list])");
  }
  if (accept(TokKind::RBracket)) {
    KILN_ASSIGN_OR_RETURN(auto want, suffix());
    switch (want.value_or(AttrKind::Int)) {
      case AttrKind::Ints:
        return Attribute(std::vector<int64_t>{});
      case AttrKind::Floats:
        return Attribute(std::vector<float>{});
      case AttrKind::Strings:
        return Attribute(std::vector<std::string>{});
      case AttrKind::Tensors:
        return Attribute(std::vector<Tensor>{});
      case AttrKind::Graphs:
        return Attribute(std::vector<Attribute::GraphPtr>{});
      default:
        return errorAt(at,
                       "an empty list needs its kind: [] : ints (or floats, strings, "
                       "tensors, graphs)");
    }
  }
  if (atNumber()) {
    std::vector<Token> items;
    do {
      if (!atNumber()) return expected("a number in the list");
      items.push_back(std::move(tok_));
      advance();
    } while (accept(TokKind::Comma));
    KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the list"));
    KILN_ASSIGN_OR_RETURN(auto want, suffix());
    return numericAttr(items, true, want);
  }
  if (is(TokKind::String)) {
    std::vector<std::string> items;
    do {
      if (!is(TokKind::String)) return expected("a quoted string in the list");
      items.push_back(std::move(tok_.text));
      advance();
    } while (accept(TokKind::Comma));
    KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the list"));
    return checked(Attribute(std::move(items)));
  }
  if (isWord("graph")) {
    std::vector<Attribute::GraphPtr> items;
    do {
      KILN_ASSIGN_OR_RETURN(auto g, parseGraph(&owner, depth + 1));
      items.push_back(std::move(g));
    } while (accept(TokKind::Comma));
    KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the list of graphs"));
    return checked(Attribute(std::move(items)));
  }
  if (is(TokKind::Ident) && parseDType(tok_.text)) {
    std::vector<Tensor> items;
    do {
      KILN_ASSIGN_OR_RETURN(Tensor t, parseTensor());
      items.push_back(std::move(t));
    } while (accept(TokKind::Comma));
    KILN_RETURN_IF_ERROR(expect(TokKind::RBracket, "',' or ']' in the list of tensors"));
    return checked(Attribute(std::move(items)));
  }
  return expected("a list element (number, string, tensor or graph)");
}

// Numbers are ints unless one is spelled as a float or the suffix asks for floats.
Expected<Attribute> TextParser::numericAttr(const std::vector<Token>& items, bool isList,
                                            std::optional<AttrKind> want) {
  bool anyFloat = false;
  for (const Token& t : items) anyFloat |= looksLikeFloat(t.text);
  AttrKind intKind = isList ? AttrKind::Ints : AttrKind::Int;
  AttrKind floatKind = isList ? AttrKind::Floats : AttrKind::Float;
  if (want && (*want != floatKind && (*want != intKind || anyFloat)))
    return errorAt(items.front(),
                   fmt::format("a {}{} cannot have kind {}", anyFloat ? "float" : "number",
                               isList ? " list" : "", attrKindName(*want)));
  bool asFloat = anyFloat || want == floatKind;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  for (const Token& t : items) {
    if (asFloat) {
      auto bits = parseFloatBits(DType::F32, t.text);
      if (!bits) return errorAt(t, bits.message());
      uint32_t b = uint32_t(*bits);
      float f;
      std::memcpy(&f, &b, 4);
      floats.push_back(f);
    } else {
      auto v = parseInt64(t.text);
      if (!v) return errorAt(t, fmt::format("'{}' is not a 64-bit integer", t.text));
      ints.push_back(*v);
    }
  }
  if (isList) return asFloat ? Attribute(std::move(floats)) : Attribute(std::move(ints));
  return asFloat ? Attribute(floats[0]) : Attribute(ints[0]);
}

}  // namespace kiln::textir
