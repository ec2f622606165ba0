// Target descriptions: which instruction set generated code may use, how the C++ compiler is
// told so, and the host's caches and cores (docs/targets.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/support/status.h"

namespace kiln {

/// The instruction-set levels kiln generates code for, lowest first.
enum class Isa {
  Generic,  ///< portable C++, no intrinsics (any compiler, any CPU)
  X86_64,   ///< x86-64 baseline (SSE2)
  Avx2,     ///< x86-64-v3: AVX2, FMA, BMI2
  Avx512,   ///< x86-64-v4: AVX-512 F/BW/CD/DQ/VL
};

struct Target {
  std::string name;  ///< "x86-64-v4", "generic", ... (host resolves to a named level)
  Isa isa = Isa::Generic;
  bool vnni = false, amx = false, bf16 = false, fp16 = false;  ///< reported, not yet used
  int vectorBits = 0;                                          ///< 0: no SIMD kernels
  int64_t l1d = 0, l2 = 0, l3 = 0;                            ///< bytes; 0: unknown
  int cores = 1;                                               ///< online logical CPUs
  std::string cpuModel;                                        ///< host brand string

  /// Flags for the C++ compiler building the generated code.
  std::vector<std::string> compilerFlags() const;
  /// __builtin_cpu_supports() names the generated create() checks before running any code
  /// built for this target (empty: runs anywhere).
  std::vector<std::string> requiredCpuFeatures() const;
  /// The kiln_cpu kernels' ISA name (avx512, avx2, generic), used in kernel names.
  std::string kernelIsa() const;
  /// Bytes of one core's L2 that a kernel plans to keep resident (kiln_cpu's
  /// KILN_CPU_L2_SHARE_BYTES; the pixel-rows conv's K-chunks): half the L2 where it is known
  /// and under 1 MiB (a Zen 3's 512 KiB: 256 KiB), else 512 KiB (measured on a 1 MiB L2).
  int64_t l2Share() const;
  /// Whether the optimized kiln_cpu kernels are used at all (false: kernels/ref only).
  bool optimizedKernels() const { return true; }
};

/// The named targets, for help text: host, x86-64, x86-64-v3, x86-64-v4, generic.
const std::vector<std::string>& targetNames();

/// This machine: the highest named x86-64 level its CPU supports (cpuid), with its caches and
/// core count.
Target detectHost();

/// A target by name ("host" detects). Unknown names are an error listing the known ones.
Expected<Target> targetByName(const std::string& name);

/// One line for `kiln targets` / --report: name, ISA, features, caches, cores.
std::string describe(const Target& t);

}  // namespace kiln
