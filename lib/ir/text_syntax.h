// Lexical pieces shared by the textual IR printer and parser: names, strings, numbers, hex.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/support/status.h"

namespace kiln::textir {

/// Deepest nesting of subgraphs the parser and the .kiln reader accept.
inline constexpr int kMaxGraphDepth = 64;

/// True when `s` may follow `%` or `@` without quotes: [A-Za-z0-9_.$/-]+ without "//".
bool isBareName(std::string_view s);
/// True when `s` is an identifier: [A-Za-z_][A-Za-z0-9_.$]*.
bool isIdentifier(std::string_view s);
bool isIdentStart(char c);
bool isIdentChar(char c);
bool isBareNameChar(char c);

/// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool isValidUtf8(std::string_view s);
/// Appends `s` as a double-quoted literal. Quotes, backslashes, control bytes and bytes that
/// are not part of valid UTF-8 are escaped, so any byte string survives and stays one line.
void appendQuoted(std::string& out, std::string_view s);
/// Appends `sigil` and `s`, bare when isBareName(s), quoted otherwise.
void appendName(std::string& out, char sigil, std::string_view s);
/// Appends `s` bare when it is an identifier not in `reserved`, quoted otherwise.
void appendIdent(std::string& out, std::string_view s,
                 std::initializer_list<std::string_view> reserved = {});
/// Escapes control bytes in an error message so it stays one line even when a message from
/// elsewhere (e.g. Graph::addInput) embeds a raw name.
std::string singleLine(std::string_view message);
/// A quoted, escaped and shortened rendering of a name for one-line error messages.
std::string quoteForMessage(std::string_view s);

/// Appends a float of type `t` (F32, F64, F16, BF16) given its bits: the shortest decimal
/// that reads back to the same bits, always with '.' or an exponent; `inf`, `-inf`; `nan`
/// for the canonical quiet NaN, else `nan(0xPAYLOAD)` with an optional leading '-'.
void appendFloat(std::string& out, DType t, uint64_t bits);
/// Parses one of the forms appendFloat writes (or a plain integer) into bits of type `t`.
Expected<uint64_t> parseFloatBits(DType t, std::string_view text);
/// True when a number token must be a float: it has '.', an exponent, or is inf/nan.
bool looksLikeFloat(std::string_view text);
/// Parses a decimal integer for an integer or bool dtype into its two's complement bits.
Expected<uint64_t> parseIntBits(DType t, std::string_view text);
/// Parses a decimal int64.
std::optional<int64_t> parseInt64(std::string_view text);

/// Half and bfloat16 conversions (round to nearest even; NaN stays NaN).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

/// Lower-case hex of bytes, and its inverse (nullopt on odd length or a non-hex digit).
void appendHex(std::string& out, const uint8_t* data, size_t size);
std::optional<std::vector<uint8_t>> decodeHex(std::string_view hex);

}  // namespace kiln::textir
