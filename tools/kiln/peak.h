// The f32 peak of one core of this machine, measured the way the kernel benchmark does: a
// tight loop of independent fused multiply-adds in the widest vectors the CPU has.
#pragma once

namespace kiln::cli {

/// GFLOP/s of one core (about 0.1 s of measuring); the vector width used in *isa.
double measurePeakGflops(const char** isa);

}  // namespace kiln::cli
