// The kernel tests generated from kernels/cpu/manifest.json: each case names a kernel, the
// check that runs it (check_<kernel>, defined beside the kernel's other tests) and its sizes
// (dims such as M, N, K: edges of the ISA's tiles, primes and large sizes, resolved per ISA by
// kiln_kernel_manifest into kernel_manifest_cases.cc). A kernel in the manifest without a check
// does not link; a check asked for a size its sweep lacks fails.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <ostream>
#include <string>

namespace kiln_cpu_test {

struct SweepDim {
  const char* name;
  int64_t value;
};

struct SweepCase {
  void (*check)(const SweepCase&);
  const char* kernel;
  int dims_used;
  std::array<SweepDim, 8> dims;

  /// The value of dim `name`; a test failure (and 1) if the sweep has no such dim.
  int64_t operator[](const char* name) const;
  /// The value of dim `name`, or `fallback` if the sweep does not set it.
  int64_t get(const char* name, int64_t fallback) const;
  /// "M=12 N=31 K=256", for failure messages.
  std::string describe() const;
};

void PrintTo(const SweepCase& c, std::ostream* os);
/// "M12_N31_K256": the case's name in the test's full name.
std::string sweepCaseName(const ::testing::TestParamInfo<SweepCase>& info);

class KernelSweep : public ::testing::TestWithParam<SweepCase> {};

}  // namespace kiln_cpu_test
