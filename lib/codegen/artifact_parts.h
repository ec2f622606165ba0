// Pieces of the generated artifact written outside artifact.cc.
#pragma once

#include <string>

#include "program.h"

namespace kiln {

/// model.h: the C API of the generated model.
std::string artifactHeader(const Program& p);

/// Whether the program runs kernels on AMX tiles (kiln_cpu/conv_amx.h, gemm_amx.h): create() then
/// checks AVX512-BF16, AMX-TILE and AMX-BF16 and asks Linux for the tile data
/// (kiln_cpu::amx_request).
bool usesAmx(const Program& p);

/// `bool cpu_supported()` (built for the x86-64 baseline) and the KILN_BASELINE macro.
std::string cpuCheckCode(const Program& p);

/// `void touch_code()`: create reads the library's code once, so the first run finds it cached.
std::string touchCodeCode();

/// `warm_pool_threads(ctx)`: create has each pool thread read the weights once (models with a
/// thread pool and weights the last-level cache holds; else nothing), and the call create
/// makes of it after setting the weights (else nothing).
std::string warmThreadsCode(const Program& p);
std::string warmThreadsCall(const Program& p);

/// {P}_status_string.
std::string statusStringCode(const Program& p);

/// {P}_max_threads and {P}_set_threads.
std::string threadCode(const Program& p);

/// {P}_profile_count, {P}_profile_last and {P}_profile_idle (count 0 without --profile).
std::string profileCode(const Program& p, bool profile);

/// manifest.json (manifest.cc).
std::string manifest(const Model& model, const Program& p, const CompileOptions& o);

}  // namespace kiln
