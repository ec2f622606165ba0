// kiln_kernel_manifest: reads kernels/cpu/manifest.json (every optimized CPU kernel: its
// header, its tiles per ISA, the edge sizes it is tested on and the shapes it is benchmarked
// on) and writes what the build needs from it: the compiler's kernel table, each ISA's kernel
// test cases, and the benchmark shapes. A malformed manifest stops the build with one line
// naming the kernel and the key.
//
//   kiln_kernel_manifest MANIFEST KERNELS_DIR lib OUT_DIR        -> OUT_DIR/kiln/cpu_kernel_table.h
//   kiln_kernel_manifest MANIFEST KERNELS_DIR tests ISA OUT_DIR  -> kernel_manifest.h,
//                                                                   kernel_manifest_cases.cc
//   kiln_kernel_manifest MANIFEST KERNELS_DIR bench ISA OUT_DIR  -> kernel_bench_shapes.h
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "expr.h"

namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

struct ManifestError {
  std::string what;
};

[[noreturn]] void fail(const std::string& what) {
  throw ManifestError{what};
}

struct Isa {
  std::string name, march;
  int64_t lanes, mr, nr;
};

struct Dim {
  std::string name;
  int64_t value;
};
using Case = std::vector<Dim>;

struct Kernel {
  std::string name, family, header, use, suffix;
  Json sweeps, bench;
};

struct Manifest {
  std::vector<Isa> isas;
  int64_t kc = 0;
  std::vector<Kernel> kernels;
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes only when the text changed, so an unchanged manifest rebuilds nothing.
void writeFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  if (fs::exists(p) && readFile(p) == text) return;
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) fail("cannot write " + p.string());
}

void onlyKeys(const Json& j, const std::set<std::string>& keys, const std::string& where) {
  if (!j.is_object()) fail(where + ": expected an object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!keys.count(it.key())) fail(where + ": unknown key \"" + it.key() + "\"");
}

const Json& need(const Json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) fail(where + ": missing \"" + key + "\"");
  return j.at(key);
}

std::string needString(const Json& j, const std::string& key, const std::string& where) {
  const Json& v = need(j, key, where);
  if (!v.is_string() || v.get<std::string>().empty())
    fail(where + ": \"" + key + "\" must be a non-empty string");
  return v.get<std::string>();
}

int64_t needPositive(const Json& j, const std::string& key, const std::string& where) {
  const Json& v = need(j, key, where);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    fail(where + ": \"" + key + "\" must be a positive integer");
  return v.get<int64_t>();
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

Manifest parse(const fs::path& path, const fs::path& kernelsDir) {
  Json j;
  try {
    j = Json::parse(readFile(path));
  } catch (const Json::exception& e) {
    fail(std::string("not valid JSON: ") + e.what());
  }
  onlyKeys(j, {"format", "about", "isas", "kc", "kernels"}, "manifest");
  if (need(j, "format", "manifest") != 1) fail("manifest: \"format\" must be 1");
  Manifest m;
  m.kc = needPositive(j, "kc", "manifest");
  for (const Json& i : need(j, "isas", "manifest")) {
    onlyKeys(i, {"isa", "march", "lanes", "mr", "nr"}, "isa");
    const std::string name = needString(i, "isa", "isa");
    const std::string where = "isa " + name;
    m.isas.push_back({name, i.value("march", ""), needPositive(i, "lanes", where),
                      needPositive(i, "mr", where), needPositive(i, "nr", where)});
  }
  // lib/target's kernel ISAs (Target::kernelIsa), each built by the kernel tests.
  for (const char* needed : {"avx512", "avx2", "generic"}) {
    bool found = false;
    for (const Isa& i : m.isas) found = found || i.name == needed;
    if (!found) fail(std::string("manifest: \"isas\" lacks ") + needed);
  }
  std::set<std::string> names;
  for (const Json& k : need(j, "kernels", "manifest")) {
    const std::string name = needString(k, "name", "kernel");
    const std::string where = "kernel " + name;
    onlyKeys(k, {"name", "family", "header", "use", "suffix", "sweeps", "bench"}, where);
    if (!isIdentifier(name)) fail(where + ": the name must be a C++ identifier");
    if (!names.insert(name).second) fail(where + ": listed twice");
    // The name generated code gives a call (profiles, manifest.json's ops): kiln_cpu::<name>
    // followed by "__<isa>_<mr>x<nr>" (kernels on the GEMM tile), "__<isa>" or nothing.
    const std::string suffix = k.value("suffix", "isa");
    if (suffix != "tile" && suffix != "isa" && suffix != "none")
      fail(where + ": \"suffix\" must be \"tile\", \"isa\" or \"none\"");
    Kernel kern{name,
                needString(k, "family", where),
                needString(k, "header", where),
                needString(k, "use", where),
                suffix,
                need(k, "sweeps", where),
                k.value("bench", Json())};
    // The kernel must be declared in its header: kiln_cpu::<name>(...).
    const std::string text = readFile(kernelsDir / kern.header);
    if (text.find(" " + name + "(") == std::string::npos)
      fail(where + ": " + kern.header + " declares no function " + name);
    if (!kern.sweeps.is_array() || kern.sweeps.empty())
      fail(where + ": \"sweeps\" must list at least one sweep (every kernel is tested)");
    m.kernels.push_back(std::move(kern));
  }
  return m;
}

std::map<std::string, int64_t> varsOf(const Isa& isa, int64_t kc) {
  return {{"lanes", isa.lanes}, {"mr", isa.mr}, {"nr", isa.nr}, {"kc", kc}};
}

int64_t valueOf(const Json& v, const std::map<std::string, int64_t>& vars,
                const std::string& where) {
  int64_t r = 0;
  if (v.is_number_integer()) {
    r = v.get<int64_t>();
  } else if (v.is_string()) {
    std::string err;
    std::optional<int64_t> e = kiln_manifest::Expr(v.get<std::string>(), vars).eval(err);
    if (!e) fail(where + ": " + err);
    r = *e;
  } else {
    fail(where + ": a size must be an integer or an expression string");
  }
  if (r < 0) fail(where + ": a size evaluates to " + std::to_string(r));
  return r;
}

/// A sweep's cases: the product of its dims' value lists (each list without repeats, in its
/// order), the first dim varying slowest.
std::vector<Case> expand(const Json& sweep, const std::map<std::string, int64_t>& vars,
                         const std::string& where) {
  if (!sweep.is_object() || sweep.empty()) fail(where + ": a sweep is an object of dims");
  std::vector<Case> cases = {Case{}};
  for (auto it = sweep.begin(); it != sweep.end(); ++it) {
    const std::string dw = where + " dim " + it.key();
    if (!isIdentifier(it.key())) fail(dw + ": not an identifier");
    std::vector<int64_t> values;
    const Json list = it.value().is_array() ? it.value() : Json::array({it.value()});
    for (const Json& v : list) {
      const int64_t x = valueOf(v, vars, dw);
      if (std::find(values.begin(), values.end(), x) == values.end()) values.push_back(x);
    }
    if (values.empty()) fail(dw + ": no values");
    std::vector<Case> next;
    for (const Case& c : cases)
      for (int64_t x : values) {
        Case n = c;
        n.push_back({it.key(), x});
        next.push_back(n);
      }
    cases = std::move(next);
  }
  if (cases.front().size() > 8) fail(where + ": at most 8 dims");
  return cases;
}

const Isa& isaNamed(const Manifest& m, const std::string& name) {
  for (const Isa& i : m.isas)
    if (i.name == name) return i;
  fail("no isa \"" + name + "\" in the manifest");
}

/// A std::array<SweepDim, 8> initializer: {{{"M", 12}, {"N", 31}}}.
std::string caseLiteral(const Case& c) {
  std::string s = "{{";
  for (size_t i = 0; i < c.size(); ++i)
    s += (i ? ", " : "") + std::string("{\"") + c[i].name + "\", " + std::to_string(c[i].value) +
         "}";
  return s + "}}";
}

std::string caseName(const Case& c) {
  std::string s;
  for (const Dim& d : c) s += (s.empty() ? "" : "_") + d.name + std::to_string(d.value);
  return s;
}

const char* kHeader =
    "// Generated by kiln_kernel_manifest from kernels/cpu/manifest.json: do not edit.\n";

std::string libTable(const Manifest& m) {
  std::string s = kHeader;
  s += "// The optimized CPU kernels the code generator may call, and each ISA's tiles.\n";
  s += "#pragma once\n\n#include <cstdint>\n#include <string_view>\n\n";
  s += "namespace kiln::cpu_kernels {\n\n";
  s += "/// An ISA's SIMD width and GEMM register tile (kernels/cpu/gemm_split.h's kMR x kNR).\n";
  s += "struct IsaTiles {\n  std::string_view isa;\n  int64_t lanes, mr, nr;\n};\n";
  s += "inline constexpr IsaTiles kIsas[] = {\n";
  for (const Isa& i : m.isas)
    s += "    {\"" + i.name + "\", " + std::to_string(i.lanes) + ", " + std::to_string(i.mr) +
         ", " + std::to_string(i.nr) + "},\n";
  s += "};\n/// Rows of B per packed block (kernels/cpu/gemm_split.h's kKC).\n";
  s += "inline constexpr int64_t kKC = " + std::to_string(m.kc) + ";\n\n";
  s += "enum class Kernel {\n";
  for (const Kernel& k : m.kernels) s += "  " + k.name + ",\n";
  s += "};\n\n/// What follows kiln_cpu::<name> in a call's name: \"__<isa>_<mr>x<nr>\", "
       "\"__<isa>\" or "
       "nothing.\nenum class Suffix { kTile, kIsa, kNone };\n";
  s += "struct KernelInfo {\n  std::string_view name, family, header;\n  Suffix suffix;\n};\n";
  s += "/// Indexed by Kernel.\ninline constexpr KernelInfo kKernels[] = {\n";
  for (const Kernel& k : m.kernels)
    s += "    {\"" + k.name + "\", \"" + k.family + "\", \"kiln_cpu/" + k.header + "\", Suffix::" +
         (k.suffix == "tile"  ? "kTile"
          : k.suffix == "isa" ? "kIsa"
                              : "kNone") +
         "},\n";
  s += "};\n\n}  // namespace kiln::cpu_kernels\n";
  return s;
}

std::string testConstants(const Manifest& m, const Isa& isa) {
  std::string s = kHeader;
  s += "// The tiles kernels/cpu/manifest.json gives the ISA this test binary is built for.\n";
  s += "#pragma once\n\n#include <cstdint>\n\nnamespace kiln_manifest {\n";
  s += "inline constexpr const char* kIsa = \"" + isa.name + "\";\n";
  s += "inline constexpr int kLanes = " + std::to_string(isa.lanes) +
       ", kMR = " + std::to_string(isa.mr) + ", kNR = " + std::to_string(isa.nr) + ";\n";
  s += "inline constexpr int64_t kKC = " + std::to_string(m.kc) + ";\n";
  s += "}  // namespace kiln_manifest\n";
  return s;
}

std::string tileName(const Isa& isa) {
  return isa.name + "_" + std::to_string(isa.mr) + "x" + std::to_string(isa.nr);
}

std::string testCases(const Manifest& m, const Isa& isa) {
  const auto vars = varsOf(isa, m.kc);
  std::string s = kHeader;
  s += "// Every kernel's edge-size cases for " + isa.name + " (tiles " + std::to_string(isa.mr) +
       "x" + std::to_string(isa.nr) + ", " + std::to_string(isa.lanes) +
       " lanes), each run by its check_<kernel>.\n";
  s += "#include \"kernel_sweep.h\"\n#include \"kiln_cpu/gemm.h\"\n\n";
  s += "static_assert(kiln_cpu::V::kLanes == " + std::to_string(isa.lanes) +
       " && kiln_cpu::kMR == " + std::to_string(isa.mr) +
       " && kiln_cpu::kNR == " + std::to_string(isa.nr) +
       " && kiln_cpu::kKC == " + std::to_string(m.kc) +
       ",\n              \"kernels/cpu/manifest.json and kernels/cpu/gemm_split.h disagree on " +
       isa.name + "'s tiles\");\n\n";
  s += "namespace kiln_cpu_test {\n\n";
  for (const Kernel& k : m.kernels)
    s += "void check_" + k.name + "(const SweepCase& c);  // " + k.family + "\n";
  s += "\nnamespace {\n";
  size_t total = 0;
  for (const Kernel& k : m.kernels) {
    std::vector<Case> cases;
    std::set<std::string> seen;
    int n = 0;
    for (const Json& sw : k.sweeps)
      for (const Case& c : expand(sw, vars, "kernel " + k.name + " sweep " + std::to_string(n++)))
        if (seen.insert(caseName(c)).second) cases.push_back(c);
    if (cases.size() > 4000) fail("kernel " + k.name + ": more than 4000 cases");
    total += cases.size();
    s += "\nconst SweepCase k_" + k.name + "[] = {\n";
    for (const Case& c : cases)
      s += "    {check_" + k.name + ", \"" + k.name + "\", " + std::to_string(c.size()) + ", " +
           caseLiteral(c) + "},\n";
    s += "};\n";
  }
  s += "\n}  // namespace\n\n";
  for (const Kernel& k : m.kernels)
    s += "INSTANTIATE_TEST_SUITE_P(" + k.name + "__" + tileName(isa) +
         ", KernelSweep, ::testing::ValuesIn(k_" + k.name + "), sweepCaseName);\n";
  s += "\n}  // namespace kiln_cpu_test\n// " + std::to_string(total) + " cases\n";
  return s;
}

std::string benchShapes(const Manifest& m, const Isa& isa) {
  const auto vars = varsOf(isa, m.kc);
  std::string s = kHeader;
  s += "// The model-shaped and square problems kiln_kernels_bench runs each kernel on.\n";
  s += "#pragma once\n\n#include \"kernel_shape.h\"\n\nnamespace kiln_bench {\n\n";
  s += "inline const KernelShape kManifestShapes[] = {\n";
  for (const Kernel& k : m.kernels) {
    if (k.bench.is_null()) continue;
    const std::string where = "kernel " + k.name + " bench";
    if (!k.bench.is_array()) fail(where + ": must be a list");
    for (const Json& b : k.bench) {
      const std::string model = needString(b, "model", where);
      Json dims = b;
      dims.erase("model");
      const std::vector<Case> cases = expand(dims, vars, where + " " + model);
      for (const Case& c : cases)
        s += "    {\"" + k.name + "\", \"" + model + "\", " + std::to_string(c.size()) + ", " +
             caseLiteral(c) + "},\n";
    }
  }
  s += "};\n\n}  // namespace kiln_bench\n";
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() < 4) fail("usage: MANIFEST KERNELS_DIR lib OUT | tests ISA OUT | bench ISA OUT");
    const Manifest m = parse(a[0], a[1]);
    // Every ISA's sweeps and bench problems must evaluate, whichever output is asked for.
    for (const Isa& isa : m.isas) {
      testCases(m, isa);
      benchShapes(m, isa);
    }
    if (a[2] == "lib" && a.size() == 4) {
      writeFile(fs::path(a[3]) / "kiln" / "cpu_kernel_table.h", libTable(m));
    } else if (a[2] == "tests" && a.size() == 5) {
      const Isa& isa = isaNamed(m, a[3]);
      const std::string constants = testConstants(m, isa), cases = testCases(m, isa);
      writeFile(fs::path(a[4]) / "kernel_manifest.h", constants);
      writeFile(fs::path(a[4]) / "kernel_manifest_cases.cc", cases);
    } else if (a[2] == "bench" && a.size() == 5) {
      writeFile(fs::path(a[4]) / "kernel_bench_shapes.h", benchShapes(m, isaNamed(m, a[3])));
    } else {
      fail("usage: MANIFEST KERNELS_DIR lib OUT | tests ISA OUT | bench ISA OUT");
    }
  } catch (const ManifestError& e) {
    std::fprintf(stderr, "%s: error: %s\n", argc > 1 ? argv[1] : "manifest", e.what.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argc > 1 ? argv[1] : "manifest", e.what());
    return 1;
  }
  return 0;
}
