// The tuning cache file: {"format": "kiln-tuning-cache", "version": 1, "machines": [{"cpu",
// "kiln_version", "entries": {KEY: {"choice", "us": {CANDIDATE: microseconds}}}}]}.
#include "kiln/codegen/tuning.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "kiln/support/file.h"
#include "../ir/atomic_file.h"

namespace kiln {
namespace {

constexpr const char* kFormat = "kiln-tuning-cache";
constexpr uint64_t kMaxCacheBytes = uint64_t(256) << 20;

/// The whole file as JSON: an empty cache when it does not exist.
Expected<nlohmann::json> readCacheJson(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return nlohmann::json{{"format", kFormat}, {"version", 1}, {"machines", nlohmann::json::array()}};
  KILN_ASSIGN_OR_RETURN(std::string text, readFile(path, kMaxCacheBytes));
  auto bad = [&](const std::string& what) {
    return makeError("tuning cache {}: {}; delete it or pass another --tuning-cache", path, what);
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not JSON (truncated or corrupt?)");
  if (!j.is_object() || j.value("format", std::string()) != kFormat)
    return bad(fmt::format("not a kiln tuning cache (no \"format\": \"{}\")", kFormat));
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
    return bad("unsupported version (this kiln reads version 1)");
  if (!j.contains("machines") || !j["machines"].is_array()) return bad("no \"machines\" array");
  for (const auto& m : j["machines"]) {
    if (!m.is_object() || !m.contains("cpu") || !m["cpu"].is_string() ||
        !m.contains("kiln_version") || !m["kiln_version"].is_string() || !m.contains("entries") ||
        !m["entries"].is_object())
      return bad("a machine section lacks \"cpu\", \"kiln_version\" or \"entries\"");
    for (const auto& [key, e] : m["entries"].items()) {
      if (!e.is_object() || !e.contains("choice") || !e["choice"].is_string())
        return bad(fmt::format("entry '{}' has no \"choice\" string", key.substr(0, 80)));
      if (e.contains("us") && !e["us"].is_object())
        return bad(fmt::format("entry '{}': \"us\" is not an object", key.substr(0, 80)));
    }
  }
  return j;
}

}  // namespace

std::map<std::string, std::string> TuningCache::choices() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, e] : entries) out[key] = e.choice;
  return out;
}

Expected<TuningCache> readTuningCache(const std::string& path, const std::string& cpu) {
  KILN_ASSIGN_OR_RETURN(nlohmann::json j, readCacheJson(path));
  TuningCache cache;
  cache.cpu = cpu;
  cache.kilnVersion = KILN_VERSION;
  for (const auto& m : j["machines"]) {
    if (m["cpu"] != cpu || m["kiln_version"] != cache.kilnVersion) continue;
    for (const auto& [key, e] : m["entries"].items()) {
      TuningEntry entry;
      entry.choice = e["choice"].get<std::string>();
      if (e.contains("us"))
        for (const auto& [cand, us] : e["us"].items())
          if (us.is_number()) entry.microseconds[cand] = us.get<double>();
      cache.entries[key] = std::move(entry);
    }
  }
  return cache;
}

Status writeTuningCache(const std::string& path, const TuningCache& cache) {
  KILN_ASSIGN_OR_RETURN(nlohmann::json j, readCacheJson(path));
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [key, e] : cache.entries) {
    nlohmann::json us = nlohmann::json::object();
    for (const auto& [cand, t] : e.microseconds) us[cand] = t;
    entries[key] = {{"choice", e.choice}, {"us", us}};
  }
  nlohmann::json machines = nlohmann::json::array();
  for (const auto& m : j["machines"])
    if (m["cpu"] != cache.cpu || m["kiln_version"] != cache.kilnVersion) machines.push_back(m);
  machines.push_back({{"cpu", cache.cpu}, {"kiln_version", cache.kilnVersion}, {"entries", entries}});
  j["machines"] = machines;
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::string text = j.dump(1) + "\n";
  kilnfmt::AtomicFileWriter w(path);
  w.write(text.data(), text.size());
  Status st = w.commit();
  if (!st.ok()) return makeError("tuning cache {}: cannot write it: {}", path, st.message());
  return Status();
}

}  // namespace kiln
