// Pieces of the generated artifact written outside artifact.cc.
#pragma once

#include <string>

#include "program.h"

namespace kiln {

/// model.h: the C API of the generated model.
std::string artifactHeader(const Program& p);

/// `bool cpu_supported()` (built for the x86-64 baseline) and the KILN_BASELINE macro.
std::string cpuCheckCode(const Program& p);

/// `void touch_code()`: create reads the library's code once, so the first run finds it cached.
std::string touchCodeCode();

/// {P}_max_threads and {P}_set_threads.
std::string threadCode(const Program& p);

/// {P}_profile_count, {P}_profile_last and {P}_profile_idle (count 0 without --profile).
std::string profileCode(const Program& p, bool profile);

/// manifest.json (manifest.cc).
std::string manifest(const Model& model, const Program& p, const CompileOptions& o);

}  // namespace kiln
