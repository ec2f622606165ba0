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
  /// The host's cpuid signature, "AuthenticAMD family 25 model 17 stepping 1" (empty off
  /// x86-64). Hypervisors often mask the brand string ("AMD EPYC" for a Zen 4 and a Zen 5
  /// alike); the family and model still tell the microarchitecture.
  std::string cpuSignature;
  /// The host's cores run a 512-bit FMA as two 256-bit halves (AMD Zen 4, family 25), so a
  /// 256-bit FMA costs half of one: the AVX-512 GEMM's 17-24-column tiles then take a 256-bit
  /// FMA per row for their last 8 columns (KILN_CPU_YMM_TAIL, kernels/cpu/gemm_half_tail.h), not
  /// one 512-bit FMA per two rows. Only `--target host` sets it; results are the same bits.
  bool splitZmmFma = false;
  /// The host's cores run two whole 512-bit FMAs a cycle: an Intel core with AMX (Sapphire
  /// Rapids and later, every model of which has two 512-bit FMA units). That is twice a Zen 4's
  /// FMA rate, fed by memory no faster, so the cost model keeps Winograd, whose transformed
  /// weights are 4x (F(4x4, 3x3)) or 16/9 (F(2x2, 3x3)) the conv's, off small images where those
  /// exceed L2 (lib/ops/conv_cost.h). Only `--target host` sets it; each conv the cost model may
  /// pick is tested against the reference.
  bool dualZmmFma = false;
  /// f32 1x1 convs and GEMMs with constant weights can run on AMX tiles, each operand in bf16
  /// pieces (kernels/cpu/amx.h): `--target host` on a CPU with AMX-TILE, AMX-BF16 and
  /// AVX512-BF16 under Linux. They do with `--amx` (amxPieces: 2 for `fast`, 3 for `exact`; 0,
  /// the default, keeps f32 FMAs). The generated create() then checks the features and asks
  /// Linux for the tile state.
  bool amxF32 = false;
  int amxPieces = 0;

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

/// cpuid leaf 1's EAX decoded as the vendors' manuals define it: the family is the base family
/// plus the extended family where the base is 0xF; the model takes the extended model as its high
/// nibble where the base family is 6 or 0xF. "family 25 model 17 stepping 1" for 0x00A10F11.
std::string cpuSignatureOf(unsigned leaf1Eax);

/// A cache size as Linux's sysfs writes it ("32768K", "1M", or bytes), in bytes; 0 for text
/// that is not one.
int64_t parseCacheSize(const std::string& text);

/// What identifies this machine's CPU to the tuning cache (docs/tuning.md): the brand string,
/// the cpuid signature and the per-core L2 size, which the kernels' plans depend on (the L3 a
/// virtual machine reports is not the one its cores share, and no plan reads it).
std::string tuningMachineName(const Target& host);

}  // namespace kiln
