// The one test every generated kernel case runs (kernel_sweep.h): its kernel's check.
#include "kernel_sweep.h"

#include <cstring>

#include "cpu_kernels_check.h"

namespace kiln_cpu_test {

int64_t SweepCase::get(const char* name, int64_t fallback) const {
  for (int i = 0; i < dims_used; ++i)
    if (std::strcmp(dims[size_t(i)].name, name) == 0) return dims[size_t(i)].value;
  return fallback;
}

int64_t SweepCase::operator[](const char* name) const {
  const int64_t v = get(name, -1);  // sizes are never negative (kiln_kernel_manifest checks)
  if (v >= 0) return v;
  ADD_FAILURE() << kernel << ": the manifest's sweep gives no dim " << name;
  return 1;
}

std::string SweepCase::describe() const {
  std::string s = kernel;
  for (int i = 0; i < dims_used; ++i)
    s += std::string(" ") + dims[size_t(i)].name + "=" + std::to_string(dims[size_t(i)].value);
  return s;
}

void PrintTo(const SweepCase& c, std::ostream* os) {
  *os << c.describe();
}

std::string sweepCaseName(const ::testing::TestParamInfo<SweepCase>& info) {
  std::string s;
  for (int i = 0; i < info.param.dims_used; ++i)
    s += (s.empty() ? "" : "_") + std::string(info.param.dims[size_t(i)].name) +
         std::to_string(info.param.dims[size_t(i)].value);
  return s;
}

TEST_P(KernelSweep, MatchesReference) {
  KILN_REQUIRE_ISA();
  const SweepCase& c = GetParam();
  SCOPED_TRACE(c.describe());
  c.check(c);
}

}  // namespace kiln_cpu_test
