// The tuning cache of `kiln compile --tune` (docs/tuning.md): per op signature, the candidate
// implementation measured fastest on a CPU, so a later compile on that CPU re-uses it.
#pragma once

#include <map>
#include <string>

#include "kiln/support/status.h"

namespace kiln {

/// One tunable op signature's result: the fastest candidate and each measured candidate's time.
struct TuningEntry {
  std::string choice;
  std::map<std::string, double> microseconds;
};

/// The entries of one CPU model and kiln version (a cache file holds several such sections).
struct TuningCache {
  std::string cpu;
  std::string kilnVersion;
  std::map<std::string, TuningEntry> entries;  ///< key: CompileOptions::tuning's key

  /// key → choice, for CompileOptions::tuning.
  std::map<std::string, std::string> choices() const;
};

/// Reads the section of `path` for `cpu` and this kiln's version; a missing file is an empty
/// cache. A file that is not a tuning cache (corrupt, truncated, wrong format) is an error that
/// names it.
Expected<TuningCache> readTuningCache(const std::string& path, const std::string& cpu);

/// Writes `cache` as its CPU's and version's section of `path`, keeping the file's other
/// sections; the file is replaced atomically.
Status writeTuningCache(const std::string& path, const TuningCache& cache);

}  // namespace kiln
