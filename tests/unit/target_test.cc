// Targets: named levels, host detection, compiler flags and the CPU features create checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "kiln/target/target.h"
#include "ops/conv_cost.h"

namespace kiln {
namespace {

TEST(Target, NamedLevels) {
  struct Case {
    const char* name;
    Isa isa;
    const char* flag;
    const char* kernels;
  } cases[] = {{"x86-64-v4", Isa::Avx512, "-march=x86-64-v4", "avx512"},
               {"x86-64-v3", Isa::Avx2, "-march=x86-64-v3", "avx2"},
               {"x86-64", Isa::X86_64, "-march=x86-64", "generic"},
               {"generic", Isa::Generic, "-DKILN_GENERIC", "generic"}};
  for (const auto& c : cases) {
    auto t = targetByName(c.name);
    ASSERT_TRUE(t.ok()) << c.name;
    EXPECT_EQ(t->name, c.name);
    EXPECT_EQ(t->isa, c.isa);
    ASSERT_EQ(t->compilerFlags().size(), 1u);
    EXPECT_EQ(t->compilerFlags()[0], c.flag);
    EXPECT_EQ(t->kernelIsa(), c.kernels);
    EXPECT_FALSE(t->splitZmmFma);  // only --target host measures the core
    EXPECT_FALSE(t->dualZmmFma);
  }
}

TEST(Target, FeaturesCheckedAtCreate) {
  EXPECT_TRUE(targetByName("generic")->requiredCpuFeatures().empty());
  EXPECT_TRUE(targetByName("x86-64")->requiredCpuFeatures().empty());
  auto v3 = targetByName("x86-64-v3")->requiredCpuFeatures();
  auto v4 = targetByName("x86-64-v4")->requiredCpuFeatures();
  auto has = [](const std::vector<std::string>& v, const char* f) {
    return std::find(v.begin(), v.end(), f) != v.end();
  };
  EXPECT_TRUE(has(v3, "avx2") && has(v3, "fma"));
  EXPECT_FALSE(has(v3, "avx512f"));
  EXPECT_TRUE(has(v4, "avx2") && has(v4, "avx512f") && has(v4, "avx512bw") && has(v4, "avx512vl"));
}

TEST(Target, CpuSignatureDecodesExtendedFamilyAndModel) {
  // Zen 4 (Genoa): base family 0xF + extended 0xA, model 0x1 with extended 0x1.
  EXPECT_EQ(cpuSignatureOf(0x00A10F11u), "family 25 model 17 stepping 1");
  // Zen 5 (Turin): extended family 0xB.
  EXPECT_EQ(cpuSignatureOf(0x00B00F21u), "family 26 model 2 stepping 1");
  // Intel family 6 takes the extended model too: Emerald Rapids, model 0xCF.
  EXPECT_EQ(cpuSignatureOf(0x000C06F2u), "family 6 model 207 stepping 2");
  // Other families ignore the extended fields (a family 5 with junk in them).
  EXPECT_EQ(cpuSignatureOf(0x0FF70543u), "family 5 model 4 stepping 3");
}

TEST(Target, ParsesSysfsCacheSizes) {
  EXPECT_EQ(parseCacheSize("32K"), 32 << 10);
  EXPECT_EQ(parseCacheSize("32768K"), int64_t(32) << 20);
  EXPECT_EQ(parseCacheSize("1M"), 1 << 20);
  EXPECT_EQ(parseCacheSize("4096"), 4096);
  EXPECT_EQ(parseCacheSize(""), 0);
  EXPECT_EQ(parseCacheSize("K"), 0);
  EXPECT_EQ(parseCacheSize("12Q"), 0);
  EXPECT_EQ(parseCacheSize("99999999999999999999K"), 0);
  EXPECT_EQ(parseCacheSize("4000000G"), 0);  // over a terabyte
  EXPECT_EQ(parseCacheSize("1024G"), int64_t(1) << 40);
}

TEST(Target, HostCachesAreSysfsFigures) {
  // Where Linux describes CPU 0's L3, the host's L3 is that figure (sysconf's came from cpuid
  // and was 10x the real one on the AMD virtual machines of session 47).
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/";
  for (int i = 0; i < 8; ++i) {
    std::ifstream level(base + "index" + std::to_string(i) + "/level");
    std::string lv;
    if (!(level >> lv)) break;
    if (lv != "3") continue;
    std::ifstream size(base + "index" + std::to_string(i) + "/size");
    std::string sz;
    size >> sz;
    EXPECT_EQ(detectHost().l3, parseCacheSize(sz)) << sz;
    return;
  }
  GTEST_SKIP() << "no L3 in sysfs here";
}

TEST(Target, TuningMachineNameSeparatesCpusBehindOneBrand) {
  Target zen4, zen5;
  zen4.cpuModel = zen5.cpuModel = "AMD EPYC";
  zen4.cpuSignature = "AuthenticAMD family 25 model 17 stepping 1";
  zen5.cpuSignature = "AuthenticAMD family 26 model 2 stepping 1";
  zen4.l2 = zen5.l2 = 1 << 20;
  zen4.l3 = zen5.l3 = 32 << 20;
  EXPECT_EQ(tuningMachineName(zen4),
            "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1; L2 1024 KiB)");
  EXPECT_NE(tuningMachineName(zen4), tuningMachineName(zen5));
  Target bare;
  EXPECT_EQ(tuningMachineName(bare), "unknown CPU");
  bare.l2 = 512 << 10;
  EXPECT_EQ(tuningMachineName(bare), "unknown CPU (L2 512 KiB)");
  bare.l3 = 32 << 20;  // not part of the name
  EXPECT_EQ(tuningMachineName(bare), "unknown CPU (L2 512 KiB)");
}

TEST(Target, UnknownNameIsAnErrorListingTheKnownOnes) {
  auto t = targetByName("pentium");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("x86-64-v4"), std::string::npos);
  EXPECT_NE(t.error().message().find("generic"), std::string::npos);
}

TEST(Target, HostIsANamedLevelThisCpuRuns) {
  Target h = detectHost();
  EXPECT_GE(h.cores, 1);
  auto named = targetByName(h.name);
  ASSERT_TRUE(named.ok()) << h.name;
  EXPECT_EQ(named->isa, h.isa);
#if defined(__x86_64__)
  __builtin_cpu_init();
  for (const auto& f : h.requiredCpuFeatures()) {
    // The host level never asks for a feature this CPU lacks.
    bool ok = false;
    if (f == "avx") ok = __builtin_cpu_supports("avx");
    if (f == "avx2") ok = __builtin_cpu_supports("avx2");
    if (f == "fma") ok = __builtin_cpu_supports("fma");
    if (f == "bmi") ok = __builtin_cpu_supports("bmi");
    if (f == "bmi2") ok = __builtin_cpu_supports("bmi2");
    if (f == "avx512f") ok = __builtin_cpu_supports("avx512f");
    if (f == "avx512bw") ok = __builtin_cpu_supports("avx512bw");
    if (f == "avx512vl") ok = __builtin_cpu_supports("avx512vl");
    if (f == "avx512dq") ok = __builtin_cpu_supports("avx512dq");
    if (f == "avx512cd") ok = __builtin_cpu_supports("avx512cd");
    EXPECT_TRUE(ok) << f;
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(h.isa, Isa::Avx512);
  }
  EXPECT_NE(h.cpuSignature.find(" family "), std::string::npos) << h.cpuSignature;
  // The split-FMA form of the GEMM tails: on an AMD family 25 core with AVX-512 only (Zen 4).
  const bool zen4 = h.isa == Isa::Avx512 && h.cpuSignature.rfind("AuthenticAMD family 25 ", 0) == 0;
  EXPECT_EQ(h.splitZmmFma, zen4) << h.cpuSignature;
  EXPECT_EQ(describe(h).find("512-bit FMAs in two halves") != std::string::npos, zen4);
  // Two whole 512-bit FMA units: an Intel core with AMX (Sapphire Rapids and later).
  const bool dual =
      h.isa == Isa::Avx512 && h.amx && h.cpuSignature.rfind("GenuineIntel family ", 0) == 0;
  EXPECT_EQ(h.dualZmmFma, dual) << h.cpuSignature;
  EXPECT_EQ(describe(h).find("two 512-bit FMA units") != std::string::npos, dual);
  EXPECT_NE(describe(h).find(h.cpuSignature), std::string::npos);
  EXPECT_NE(tuningMachineName(h).find(h.cpuSignature), std::string::npos);
#endif
  EXPECT_NE(describe(h).find(h.name), std::string::npos);
}

TEST(Target, L2ShareIsHalfOfASmallL2) {
  Target t;
  EXPECT_EQ(t.l2Share(), 512 << 10);  // unknown L2: the size measured on a 1 MiB L2
  t.l2 = 512 << 10;                   // Zen 3
  EXPECT_EQ(t.l2Share(), 256 << 10);
  t.l2 = 1 << 20;  // Zen 4/5: as measured there
  EXPECT_EQ(t.l2Share(), 512 << 10);
  t.l2 = 2 << 20;  // larger L2s keep the measured size
  EXPECT_EQ(t.l2Share(), 512 << 10);
  t.l2 = 64 << 10;  // never below 64 KiB
  EXPECT_EQ(t.l2Share(), 64 << 10);
}

// The cost model's Winograd picks (lib/ops/conv_cost.h) for ResNet-50's 3x3 convs, on an
// AVX-512 target with and without two 512-bit FMA units (a 2 MiB L2).
TEST(Target, WinogradOffSmallImagesWhereFmasOutrunMemory) {
  using cpu_detail::winograd2ByDefault;
  using cpu_detail::winogradByDefault;
  Target t = *targetByName("x86-64-v4");
  t.l2 = int64_t(2) << 20;
  auto conv3x3 = [](int64_t c, int64_t side) {
    return std::vector<int64_t>{1, c, side, side, c, 3, 3, side, side, 1, 1, 1, 1, 1, 1, 1};
  };
  const auto s56 = conv3x3(64, 56), s28 = conv3x3(128, 28), s14 = conv3x3(256, 14),
             s7 = conv3x3(512, 7);
  for (int threads : {1, 2}) {
    for (const auto& s : {s56, s28, s14}) EXPECT_TRUE(winogradByDefault(s, t, threads));
    EXPECT_FALSE(winogradByDefault(s7, t, threads));
    EXPECT_TRUE(winograd2ByDefault(s7, t, threads));
  }
  t.dualZmmFma = true;
  for (int threads : {1, 2}) {
    EXPECT_TRUE(winogradByDefault(s56, t, threads));
    EXPECT_TRUE(winogradByDefault(s28, t, threads));
    // F(4x4)'s 16 tiles at 14x14 stream 9.4 MB of U: F(2x2) at 1 thread, F(4x4) at 2.
    EXPECT_EQ(winogradByDefault(s14, t, threads), threads > 1);
    EXPECT_EQ(winograd2ByDefault(s14, t, threads), threads == 1);
    // F(2x2)'s 16 tiles at 7x7 stream 16.8 MB of U: neither (the pixel-rows conv).
    EXPECT_FALSE(winogradByDefault(s7, t, threads));
    EXPECT_FALSE(winograd2ByDefault(s7, t, threads));
  }
  t.l2 = 0;  // unknown: taken as 2 MiB
  EXPECT_FALSE(winogradByDefault(s14, t, 1));
  EXPECT_TRUE(winograd2ByDefault(s14, t, 1));
  // Small channel counts, whose U fits L2 (PP-OCRv4 det's 96 -> 24 head at 20x20), keep it.
  const std::vector<int64_t> head = {1, 96, 20, 20, 24, 3, 3, 20, 20, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_TRUE(winogradByDefault(head, t, 1));
}

}  // namespace
}  // namespace kiln
