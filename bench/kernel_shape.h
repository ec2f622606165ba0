// A benchmark problem from kernels/cpu/manifest.json ("bench" of a kernel): the kernel, the
// model layer or "square" it stands for, and its sizes by name (M, N, K; C, HW, M, KS, S, R).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln_bench {

struct ShapeDim {
  const char* name;
  int64_t value;
};

struct KernelShape {
  const char* kernel;
  const char* model;
  int dims_used;
  std::array<ShapeDim, 8> dims;

  /// The size named `name`, or `fallback` where the manifest's entry does not give it.
  int64_t get(const char* name, int64_t fallback) const {
    for (int i = 0; i < dims_used; ++i)
      if (std::strcmp(dims[size_t(i)].name, name) == 0) return dims[size_t(i)].value;
    return fallback;
  }
  /// The size named `name`; a manifest entry without it stops the benchmark binary.
  int64_t operator[](const char* name) const {
    const int64_t v = get(name, -1);
    if (v < 0) {
      std::fprintf(stderr, "kernels/cpu/manifest.json: %s bench %s gives no %s\n", kernel, model,
                   name);
      std::exit(1);
    }
    return v;
  }
};

}  // namespace kiln_bench
