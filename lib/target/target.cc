// Target descriptions and host detection (cpuid on x86-64; caches from sysfs, else sysconf;
// cores from sysconf).
#include "kiln/target/target.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kiln {
namespace {

Target named(const std::string& name, Isa isa, int bits) {
  Target t;
  t.name = name;
  t.isa = isa;
  t.vectorBits = bits;
  return t;
}

int64_t sysconfBytes(int key) {
  long v = sysconf(key);
  return v > 0 ? int64_t(v) : 0;
}

std::string firstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

/// The size of CPU 0's data or unified cache of this level as Linux's sysfs describes it, 0 if
/// it does not. glibc's sysconf derives the L3 from cpuid, and on these AMD virtual machines it
/// reports 320 MiB for a 32 MiB L3 (the figure of the whole package, not of the cores' share).
int64_t sysfsCacheBytes(int level) {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string lv = firstLine(dir + "level");
    if (lv.empty()) break;
    const std::string type = firstLine(dir + "type");
    if (lv == std::to_string(level) && (type == "Data" || type == "Unified"))
      return parseCacheSize(firstLine(dir + "size"));
  }
  return 0;
}

/// sysfs's figure for the cache of this level, else sysconf's.
int64_t cacheBytes(int level, int sysconfKey) {
  const int64_t b = sysfsCacheBytes(level);
  return b > 0 ? b : sysconfBytes(sysconfKey);
}

/// cpuid leaf 1's family: the base family, plus the extended family where the base is 0xF.
unsigned cpuFamilyOf(unsigned eax) {
  const unsigned base = (eax >> 8) & 0xF;
  return base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
}

#if defined(__x86_64__)
struct CpuidBits {
  bool avx2 = false, fma = false, bmi1 = false, bmi2 = false, osYmm = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512cd = false;
  bool osZmm = false, vnni = false, amx = false, amxBf16 = false, bf16 = false, fp16 = false;
  std::string brand, signature;
  bool amd = false, intel = false;
  unsigned family = 0;
};

CpuidBits readCpuid() {
  CpuidBits b;
  unsigned a = 0, bx = 0, c = 0, d = 0;
  char vendor[13] = {};
  if (__get_cpuid(0, &a, &bx, &c, &d)) {
    std::memcpy(vendor, &bx, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
  }
  b.amd = std::strcmp(vendor, "AuthenticAMD") == 0;
  b.intel = std::strcmp(vendor, "GenuineIntel") == 0;
  if (!__get_cpuid(1, &a, &bx, &c, &d)) return b;
  b.signature = cpuSignatureOf(a);
  b.family = cpuFamilyOf(a);
  if (vendor[0]) b.signature = std::string(vendor) + " " + b.signature;
  b.fma = c & (1u << 12);
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (osxsave && avx) {
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    b.osYmm = (lo & 0x6u) == 0x6u;      // XMM and YMM state enabled by the OS
    b.osZmm = (lo & 0xE6u) == 0xE6u;    // ... and opmask, ZMM_Hi256, Hi16_ZMM
  }
  if (__get_cpuid_count(7, 0, &a, &bx, &c, &d)) {
    b.bmi1 = bx & (1u << 3);
    b.avx2 = bx & (1u << 5);
    b.bmi2 = bx & (1u << 8);
    b.avx512f = bx & (1u << 16);
    b.avx512dq = bx & (1u << 17);
    b.avx512cd = bx & (1u << 28);
    b.avx512bw = bx & (1u << 30);
    b.avx512vl = bx & (1u << 31);
    b.vnni = c & (1u << 11);
    b.fp16 = d & (1u << 23);
    b.amx = d & (1u << 24);
    b.amxBf16 = d & (1u << 22);
    if (__get_cpuid_count(7, 1, &a, &bx, &c, &d)) b.bf16 = a & (1u << 5);
  }
  unsigned maxExt = __get_cpuid_max(0x80000000u, nullptr);
  if (maxExt >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4] = {};
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    b.brand = brand;
    while (!b.brand.empty() && b.brand.back() == ' ') b.brand.pop_back();
    while (!b.brand.empty() && b.brand.front() == ' ') b.brand.erase(b.brand.begin());
  }
  return b;
}
#endif

}  // namespace

std::vector<std::string> Target::compilerFlags() const {
  switch (isa) {
    case Isa::Generic: return {"-DKILN_GENERIC"};
    case Isa::X86_64: return {"-march=x86-64"};
    case Isa::Avx2: return {"-march=x86-64-v3"};
    case Isa::Avx512: return {"-march=x86-64-v4"};
  }
  return {};
}

std::vector<std::string> Target::requiredCpuFeatures() const {
  std::vector<std::string> f;
  if (isa >= Isa::Avx2) f = {"avx", "avx2", "fma", "bmi", "bmi2"};
  if (isa >= Isa::Avx512)
    for (const char* x : {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"})
      f.push_back(x);
  return f;
}

std::string Target::kernelIsa() const {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "generic";
  }
}

int64_t Target::l2Share() const {
  constexpr int64_t kDefault = int64_t(512) << 10;
  if (l2 <= 0 || l2 >= 2 * kDefault) return kDefault;
  return std::max<int64_t>(l2 / 2, int64_t(64) << 10);
}

const std::vector<std::string>& targetNames() {
  static const std::vector<std::string> names = {"host", "x86-64-v4", "x86-64-v3", "x86-64",
                                                 "generic"};
  return names;
}

Target detectHost() {
  Target t = named("generic", Isa::Generic, 0);
#if defined(__x86_64__)
  CpuidBits b = readCpuid();
  t = named("x86-64", Isa::X86_64, 128);
  if (b.avx2 && b.fma && b.bmi1 && b.bmi2 && b.osYmm) t = named("x86-64-v3", Isa::Avx2, 256);
  if (t.isa == Isa::Avx2 && b.avx512f && b.avx512bw && b.avx512vl && b.avx512dq &&
      b.avx512cd && b.osZmm)
    t = named("x86-64-v4", Isa::Avx512, 512);
  t.vnni = b.vnni;
  t.amx = b.amx;
  t.bf16 = b.bf16;
  t.fp16 = b.fp16;
  t.cpuModel = b.brand;
  t.cpuSignature = b.signature;
  // Zen 4 is the AMD family with AVX-512 that splits it (Zen 5, family 26, runs it whole).
  t.splitZmmFma = t.isa == Isa::Avx512 && b.amd && b.family == 25;
  // AMX came with Sapphire Rapids, all of whose models have two 512-bit FMA units (some earlier
  // Xeons have one; cpuid does not tell, so they are left out).
  t.dualZmmFma = t.isa == Isa::Avx512 && b.intel && b.amx;
#if defined(__linux__)
  t.amxF32 = t.isa == Isa::Avx512 && b.amx && b.amxBf16;
#endif
#endif
  t.l1d = cacheBytes(1, _SC_LEVEL1_DCACHE_SIZE);
  t.l2 = cacheBytes(2, _SC_LEVEL2_CACHE_SIZE);
  t.l3 = cacheBytes(3, _SC_LEVEL3_CACHE_SIZE);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  t.cores = cores > 0 ? int(cores) : 1;
  return t;
}

Expected<Target> targetByName(const std::string& name) {
  if (name == "host") return detectHost();
  if (name == "generic") return named("generic", Isa::Generic, 0);
  if (name == "x86-64") return named("x86-64", Isa::X86_64, 128);
  if (name == "x86-64-v3") return named("x86-64-v3", Isa::Avx2, 256);
  if (name == "x86-64-v4") return named("x86-64-v4", Isa::Avx512, 512);
  return makeError("unknown target '{}' — use host, x86-64-v4, x86-64-v3, x86-64 or generic",
                   name);
}

std::string describe(const Target& t) {
  std::string s = fmt::format("{} (kernels: {}, {}-bit vectors", t.name, t.kernelIsa(),
                              t.vectorBits);
  if (t.vnni) s += ", VNNI";
  if (t.bf16) s += ", BF16";
  if (t.fp16) s += ", FP16";
  if (t.amx) s += ", AMX";
  if (t.splitZmmFma) s += ", 512-bit FMAs in two halves";
  if (t.dualZmmFma) s += ", two 512-bit FMA units";
  if (t.amxF32) s += ", AMX-BF16 (--amx)";
  s += ")";
  if (t.l1d || t.l2 || t.l3)
    s += fmt::format("; L1d {} KiB, L2 {} KiB, L3 {} KiB", t.l1d / 1024, t.l2 / 1024,
                     t.l3 / 1024);
  s += fmt::format("; {} cores", t.cores);
  if (!t.cpuModel.empty()) s += "; " + t.cpuModel;
  if (!t.cpuSignature.empty()) s += " (" + t.cpuSignature + ")";
  return s;
}

int64_t parseCacheSize(const std::string& text) {
  int64_t n = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (n > (int64_t(1) << 40)) return 0;  // absurd: no cache is a terabyte
    n = n * 10 + (text[i] - '0');
  }
  if (i == 0) return 0;
  const std::string unit = text.substr(i);
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (shift < 0 || n > (int64_t(1) << (40 - shift))) return 0;  // not a size, or over 1 TiB
  return n << shift;
}

std::string cpuSignatureOf(unsigned eax) {
  const unsigned base = (eax >> 8) & 0xF, extModel = (eax >> 16) & 0xF, stepping = eax & 0xF;
  unsigned model = (eax >> 4) & 0xF;
  if (base == 0x6 || base == 0xF) model |= extModel << 4;
  return fmt::format("family {} model {} stepping {}", cpuFamilyOf(eax), model, stepping);
}

std::string tuningMachineName(const Target& host) {
  std::string s = host.cpuModel.empty() ? "unknown CPU" : host.cpuModel;
  std::string details = host.cpuSignature;
  if (host.l2 > 0)
    details += fmt::format("{}L2 {} KiB", details.empty() ? "" : "; ", host.l2 / 1024);
  if (!details.empty()) s += " (" + details + ")";
  return s;
}

}  // namespace kiln
