// Writing and reading .kiln files: fixed header, CBOR sections, mappable weights (docs/ir.md).
#include "kiln/ir/kiln_format.h"

#include <fmt/format.h>

#include <filesystem>
#include <new>
#include <optional>
#include <set>

#include "atomic_file.h"
#include "kiln/support/checked_math.h"
#include "kiln/support/file.h"
#include "kiln/support/sha256.h"
#include "kiln_codec.h"
#include "safetensors.h"
#include "text_syntax.h"

namespace kiln {
namespace {

using kilnfmt::json;

// Header layout (all integers little-endian).
constexpr size_t kHeaderSize = 160;
constexpr size_t kVersionAt = 8;        // u32 format version
constexpr size_t kFlagsAt = 12;         // u32, must be 0
constexpr size_t kKilnVersionAt = 16;   // 32 bytes, NUL-padded
constexpr size_t kChecksumAt = 48;      // 32 bytes, SHA-256
constexpr size_t kSectionTableAt = 80;  // 5 x (u64 offset, u64 size)
constexpr uint64_t kAlign = 64;
// Nesting allowed in the CBOR sections: several levels per subgraph level.
constexpr int kMaxCborDepth = 16 * textir::kMaxGraphDepth;

enum Section { kMetadata, kSignature, kHints, kGraph, kWeights, kNumSections };
constexpr const char* kSectionNames[kNumSections] = {"metadata", "signature", "hints", "graph",
                                                     "weights"};

void putLE(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}

uint64_t getLE(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

uint64_t alignUp(uint64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

// SHA-256 of the header (checksum field zeroed) followed by the non-weight sections.
std::string checksum(const uint8_t* header, const std::string_view (&sections)[kWeights]) {
  uint8_t copy[kHeaderSize];
  std::memcpy(copy, header, kHeaderSize);
  std::memset(copy + kChecksumAt, 0, 32);
  Sha256 h;
  h.update(copy, kHeaderSize);
  for (std::string_view s : sections) h.update(s.data(), s.size());
  return h.hexDigest();
}

// The name of the safetensors companion; only a plain file name in the same directory.
bool isPlainFileName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find("..") == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// Decides where each tensor goes while the graph is encoded.
class WeightPlanner {
 public:
  explicit WeightPlanner(uint64_t externalAbove) : externalAbove_(externalAbove) {}

  json place(const Tensor& t, const std::string& nameHint) {
    uint64_t size = t.byteSize();
    if (size > externalAbove_ && !kilnfmt::safetensorsDType(t.dtype()).empty()) {
      std::string key = keyFor(nameHint);
      external.push_back({key, t});
      return {{"ext", key}};
    }
    uint64_t offset = alignUp(weightsSize);
    embedded.emplace_back(t, offset);
    weightsSize = offset + size;
    return {{"off", offset}};
  }

  std::vector<std::pair<Tensor, uint64_t>> embedded;
  std::vector<kilnfmt::SafetensorsEntry> external;
  uint64_t weightsSize = 0;

 private:
  // safetensors keys are JSON strings: the initializer's name when it is usable.
  std::string keyFor(const std::string& hint) {
    std::string key = hint;
    if (key.empty() || key == "__metadata__" || !textir::isValidUtf8(key) || keys_.count(key))
      key = fmt::format("kiln.tensor.{}", external.size());
    while (keys_.count(key)) key += "_";
    keys_.insert(key);
    return key;
  }
  uint64_t externalAbove_;
  std::set<std::string> keys_;
};

Status writeImpl(const Model& model, const std::string& path, const KilnWriteOptions& options) {
  if (!model.graph) return makeError("{}: the model has no graph to write", path);
  std::filesystem::path fsPath(path);
  std::string companion = fsPath.stem().string() + ".safetensors";

  WeightPlanner planner(options.externalWeightsAbove);
  json graphSection = {
      {"graph", kilnfmt::encodeGraph(*model.graph, [&](const Tensor& t, const std::string& hint) {
         return planner.place(t, hint);
       })}};
  if (!planner.external.empty()) {
    if (!isPlainFileName(companion))
      return makeError(
          "{}: cannot name an external weights file for this path; choose a file "
          "name without '..'",
          path);
    std::string companionPath = (fsPath.parent_path() / companion).string();
    KILN_ASSIGN_OR_RETURN(
        std::string sha,
        kilnfmt::writeSafetensors(companionPath, planner.external,
                                  {{"format", "kiln"}, {"kiln_version", KILN_VERSION}}));
    graphSection["external"] = {{"file", companion}, {"header_sha256", sha}};
  }
  std::vector<uint8_t> bytes[kWeights] = {json::to_cbor(kilnfmt::encodeMetadata(model.meta)),
                                          json::to_cbor(kilnfmt::encodeSignature(*model.graph)),
                                          json::to_cbor(kilnfmt::encodeHints(model.meta)),
                                          json::to_cbor(graphSection)};

  uint8_t header[kHeaderSize] = {};
  std::memcpy(header, kKilnMagic.data(), kKilnMagic.size());
  putLE(header + kVersionAt, kKilnFormatVersion, 4);
  putLE(header + kFlagsAt, 0, 4);
  std::string_view version = KILN_VERSION;
  std::memcpy(header + kKilnVersionAt, version.data(), std::min<size_t>(version.size(), 31));
  uint64_t offset = kHeaderSize;
  std::string_view views[kWeights];
  for (int s = 0; s < kWeights; ++s) {
    putLE(header + kSectionTableAt + 16 * s, offset, 8);
    putLE(header + kSectionTableAt + 16 * s + 8, bytes[s].size(), 8);
    views[s] = {reinterpret_cast<const char*>(bytes[s].data()), bytes[s].size()};
    offset += bytes[s].size();
  }
  uint64_t weightsAt = alignUp(offset);
  putLE(header + kSectionTableAt + 16 * kWeights, weightsAt, 8);
  putLE(header + kSectionTableAt + 16 * kWeights + 8, planner.weightsSize, 8);
  auto digest = textir::decodeHex(checksum(header, views));
  std::memcpy(header + kChecksumAt, digest->data(), 32);

  kilnfmt::AtomicFileWriter out(path);
  out.write(header, kHeaderSize);
  for (const auto& b : bytes) out.write(b.data(), b.size());
  for (const auto& [t, at] : planner.embedded) {
    out.padTo(weightsAt + at);
    out.write(t.bytes(), t.byteSize());
  }
  out.padTo(weightsAt + planner.weightsSize);
  return out.commit();
}

Expected<Model> readImpl(const std::string& path, int64_t maxNodes) {
  KILN_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  const uint8_t* p = file->data();
  uint64_t size = file->size();
  std::string_view start(reinterpret_cast<const char*>(p), std::min<uint64_t>(size, 8));
  bool magicPrefix = size < 8 && kKilnMagic.starts_with(start);
  if (!looksLikeKilnFile(start) && !magicPrefix)
    return makeError("{}: not a .kiln file (its first bytes are not the .kiln magic)", path);
  if (size < kHeaderSize)
    return makeError("{}: truncated .kiln file: {} bytes is shorter than the {}-byte header", path,
                     size, kHeaderSize);
  uint64_t version = getLE(p + kVersionAt, 4);
  std::string writer;
  for (size_t i = 0; i < 32 && p[kKilnVersionAt + i] >= 0x20 && p[kKilnVersionAt + i] < 0x7f; ++i)
    writer += char(p[kKilnVersionAt + i]);
  if (version > kKilnFormatVersion)
    return makeError(
        "{}: .kiln format version {} is newer than this kiln reads (up to {}); it "
        "was written by kiln {}: upgrade kiln to read it",
        path, version, kKilnFormatVersion, writer);
  if (version == 0 || getLE(p + kFlagsAt, 4) != 0)
    return makeError("{}: corrupted .kiln header (bad format version or flags)", path);

  uint64_t at[kNumSections], len[kNumSections];
  for (int s = 0; s < kNumSections; ++s) {
    at[s] = getLE(p + kSectionTableAt + 16 * s, 8);
    len[s] = getLE(p + kSectionTableAt + 16 * s + 8, 8);
    uint64_t end = at[s] + len[s];
    if (at[s] < kHeaderSize || end < at[s] || end > size)
      return makeError(
          "{}: truncated or corrupted .kiln file: the {} section (bytes {}..{}) lies "
          "outside the file ({} bytes)",
          path, kSectionNames[s], at[s], end, size);
  }
  if (at[kWeights] % kAlign)
    return makeError("{}: corrupted .kiln file: the weights section is not 64-byte aligned", path);
  std::string_view views[kWeights];
  for (int s = 0; s < kWeights; ++s)
    views[s] = {reinterpret_cast<const char*>(p + at[s]), size_t(len[s])};
  std::string stored;
  textir::appendHex(stored, p + kChecksumAt, 32);
  if (stored != checksum(p, views))
    return makeError(
        "{}: corrupted .kiln file: checksum mismatch in the header or graph "
        "sections",
        path);

  json sections[kWeights];
  for (int s = 0; s < kWeights; ++s) {
    auto j = kilnfmt::parseCbor(p + at[s], size_t(len[s]), kMaxCborDepth);
    if (!j) return makeError("{}: corrupted {} section: {}", path, kSectionNames[s], j.message());
    sections[s] = std::move(*j);
  }

  Model m;
  KILN_RETURN_IF_ERROR(kilnfmt::decodeMetadata(sections[kMetadata], m.meta));
  KILN_RETURN_IF_ERROR(kilnfmt::decodeHints(sections[kHints], m.meta));
  const json& graphSection = sections[kGraph];
  std::optional<kilnfmt::SafetensorsReader> external;
  if (graphSection.contains("external")) {
    const json& e = graphSection.at("external");
    std::string name = e.at("file").get<std::string>();
    if (!isPlainFileName(name))
      return makeError(
          "{}: refuses external weights file {}: it must be a plain file name in the "
          "same directory",
          path, textir::quoteForMessage(name));
    std::string companion = (std::filesystem::path(path).parent_path() / name).string();
    KILN_ASSIGN_OR_RETURN(external, kilnfmt::SafetensorsReader::open(companion));
    if (external->headerSha256() != e.at("header_sha256").get<std::string>())
      return makeError(
          "{}: does not belong to {} (its header checksum differs): write the .kiln "
          "file and its weights again together",
          companion, path);
  }
  uint64_t weightsAt = at[kWeights], weightsLen = len[kWeights];
  auto source = [&](const json& ref, DType dtype, std::vector<int64_t> dims) -> Expected<Tensor> {
    if (ref.contains("ext")) {
      if (!external)
        return makeError("a tensor refers to external weights but the file names none");
      return external->tensor(ref.at("ext").get<std::string>(), dtype, dims);
    }
    uint64_t off = ref.at("off").get<uint64_t>();
    auto count = checkedProduct(dims);
    auto bytes = count ? dtypeStorageBytes(dtype, *count) : std::nullopt;
    if (!bytes) return makeError("a {} tensor has invalid dims", dtypeName(dtype));
    if (off % kAlign || off > weightsLen || uint64_t(*bytes) > weightsLen - off)
      return makeError(
          "tensor data at weights offset {} ({} bytes) lies outside the weights "
          "section or is misaligned",
          off, *bytes);
    return Tensor::fromMapped(dtype, std::move(dims), file, weightsAt + off, uint64_t(*bytes));
  };
  auto graph = kilnfmt::decodeGraph(graphSection.at("graph"), nullptr, source, maxNodes);
  if (!graph) return makeError("{}: {}", path, graph.message());
  m.graph = std::move(*graph);
  auto sig = kilnfmt::checkSignature(sections[kSignature], *m.graph);
  if (!sig.ok()) return makeError("{}: corrupted .kiln file: {}", path, sig.message());
  return m;
}

}  // namespace

bool looksLikeKilnFile(std::string_view firstBytes) {
  return firstBytes.starts_with(kKilnMagic);
}

Status writeKilnFile(const Model& model, const std::string& path, const KilnWriteOptions& options) {
  try {
    Status st = writeImpl(model, path, options);
    if (!st.ok()) return Error(textir::singleLine(st.message()));
    return st;
  } catch (const std::exception& e) {
    return makeError("{}: cannot write .kiln file: {}", path, e.what());
  }
}

Expected<Model> readKilnFile(const std::string& path, int64_t maxNodes) {
  try {
    auto m = readImpl(path, maxNodes);
    if (!m) return Error(textir::singleLine(m.message()));
    return m;
  } catch (const std::bad_alloc&) {
    return makeError("{}: out of memory while reading the .kiln file", path);
  } catch (const std::exception& e) {
    return makeError("{}: corrupted .kiln file ({})", path, e.what());
  }
}

}  // namespace kiln
