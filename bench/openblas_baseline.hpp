#pragma once
// The OpenBLAS baseline of the benches, kept honest (issue 35, item 13).
//
// Debian's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels once, when the library is loaded:
// from OPENBLAS_CORETYPE if set, else from cpuid. On a CPU it does not know (Emerald Rapids in
// 0.3.21) it falls back to its Prescott kernels (SSE3, no FMA), about a fifth of the speed of
// its SkylakeX kernels, and every "x sgemm" ratio against it is inflated by as much.
//
// So every bench with an OpenBLAS baseline asks `probe()`: it names the core the linked library
// runs, and where that core is a generic fallback (older than Haswell) on a CPU with AVX-512 or
// AVX2+FMA, it loads a second copy of the same library file with OPENBLAS_CORETYPE set to the
// matching tuned core (SKYLAKEX / HASWELL) and hands out its entry points; the bench runs its
// baseline rows on both and checks the tuned copy's results against the default's (`check_*`).
//
// Why a second copy and not a re-exec: both kernels live in one process, so one run shows the
// fallback rows, the tuned rows and the check between them. The same path cannot be dlopen'ed
// twice (the loader returns the loaded library: same file), so the library file is copied to a
// fresh temporary folder and loaded from there, then the copy is deleted (the mapping stays);
// RTLD_DEEPBIND binds the copy's references to its own symbols first (its kernel table
// `gotoblas`, its thread pool), not to the first copy's exported ones. bench/README.md#gemm-gemm.
#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>  // mkdtemp, setenv

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace minifloat_bench::openblas {

/// The entry points a bench calls, from the linked library or from the tuned copy.
struct library {
  char* (*corename)() = nullptr;
  void (*set_num_threads)(int) = nullptr;
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_sgemv) sgemv = nullptr;
  std::string core() const { return corename != nullptr ? std::string(corename()) : std::string("?"); }
};

inline library linked() { return {&openblas_get_corename, &openblas_set_num_threads, &cblas_sgemm, &cblas_sgemv}; }

/// OpenBLAS's x86-64 core names older than its Haswell kernels (no FMA): on a CPU with FMA these
/// only run when OpenBLAS did not recognise the CPU or was told to (OPENBLAS_CORETYPE).
inline bool is_fallback(std::string_view core) {
  std::string c(core);
  for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static constexpr std::string_view old[] = {
      "unknown", "katmai",    "coppermine", "northwood", "prescott", "banias",      "atom",
      "core2",   "penryn",    "dunnington", "nehalem",   "athlon",   "opteron",     "opteron(sse3)",
      "barcelona", "nano",    "sandybridge", "bobcat",   "bulldozer", "piledriver", "steamroller",
      "excavator"};
  return std::find(std::begin(old), std::end(old), c) != std::end(old);
}

/// The OPENBLAS_CORETYPE of the tuned kernels this CPU can run ("" without FMA: nothing better).
inline std::string tuned_coretype() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "SKYLAKEX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
#endif
  return "";
}

struct baseline {
  library default_lib = linked();
  std::string default_core;
  bool fallback = false;         // default_core is a generic fallback on a CPU with FMA
  std::string coretype;          // what the tuned copy was asked for ("" when not needed)
  std::optional<library> tuned;  // the copy, when it loaded and runs a tuned core
  std::string tuned_core;
  std::string note;  // one line: what runs, or why the tuned copy is missing
};

namespace detail {

/// Loads a private copy of the library that holds `symbol`, with OPENBLAS_CORETYPE = coretype
/// while it initialises. Returns the copy or sets `why`.
inline std::optional<library> load_copy(const void* symbol, const std::string& coretype, std::string& why) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) {
    why = "dladdr found no library file for openblas_get_corename";
    return std::nullopt;
  }
  std::error_code ec;
  const auto file = std::filesystem::canonical(info.dli_fname, ec);
  if (ec || file == std::filesystem::canonical("/proc/self/exe", ec)) {
    why = std::string("cannot locate the OpenBLAS library file (dladdr gave ") + info.dli_fname + ")";
    return std::nullopt;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/minifloat_openblas_XXXXXX";
  const std::string pattern = tmpl;  // mkdtemp may change the X's even when it fails
  if (mkdtemp(tmpl.data()) == nullptr) {
    why = "cannot create a temporary folder " + pattern;
    return std::nullopt;
  }
  const std::filesystem::path dir(tmpl);
  const auto copy = dir / file.filename();
  void* handle = nullptr;
  if (std::filesystem::copy_file(file, copy, ec)) {
    // The copy reads OPENBLAS_CORETYPE in its constructor, during dlopen; the caller's value
    // (if any) is put back afterwards so that child processes see what the user set.
    const char* old = std::getenv("OPENBLAS_CORETYPE");
    const std::optional<std::string> saved = old != nullptr ? std::optional<std::string>(old) : std::nullopt;
    setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
    handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (saved) setenv("OPENBLAS_CORETYPE", saved->c_str(), 1);
    else unsetenv("OPENBLAS_CORETYPE");
    if (handle == nullptr) {
      const char* e = dlerror();
      why = std::string("dlopen of the copy failed: ") + (e != nullptr ? e : "?");
    }
  } else {
    why = "cannot copy " + file.string() + " to " + copy.string() + ": " + ec.message();
  }
  std::filesystem::remove_all(dir, ec);  // the loaded copy stays mapped
  if (handle == nullptr) return std::nullopt;
  library lib;
  lib.corename = reinterpret_cast<char* (*)()>(dlsym(handle, "openblas_get_corename"));
  lib.set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads"));
  lib.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(handle, "cblas_sgemm"));
  lib.sgemv = reinterpret_cast<decltype(&cblas_sgemv)>(dlsym(handle, "cblas_sgemv"));
  if (lib.corename == nullptr || lib.set_num_threads == nullptr || lib.sgemm == nullptr || lib.sgemv == nullptr) {
    why = "the copy lacks openblas_get_corename, openblas_set_num_threads, cblas_sgemm or cblas_sgemv";
    return std::nullopt;
  }
  return lib;
}

}  // namespace detail

/// Probed once per process (the first call loads the tuned copy where one is needed).
inline const baseline& probe() {
  static const baseline b = [] {
    baseline r;
    r.default_core = r.default_lib.core();
    const std::string want = tuned_coretype();
    r.fallback = is_fallback(r.default_core) && !want.empty();
    if (!r.fallback) {
      r.note = "OpenBLAS runs its " + r.default_core + " kernels";
      return r;
    }
    r.coretype = want;
    std::string why;
    r.tuned = detail::load_copy(reinterpret_cast<const void*>(&openblas_get_corename), want, why);
    if (r.tuned) {
      r.tuned_core = r.tuned->core();
      if (is_fallback(r.tuned_core)) {
        why = "the copy loaded with OPENBLAS_CORETYPE=" + want + " still runs " + r.tuned_core;
        r.tuned.reset();
      }
    }
    const std::string head = "OpenBLAS runs its " + r.default_core + " kernels, a generic fallback on this CPU";
    if (r.tuned)
      r.note = head + "; the *_tuned rows run a copy with OPENBLAS_CORETYPE=" + want + " (" + r.tuned_core +
               " kernels), checked against the default's results; ratios use the tuned rows";
    else
      r.note = head + ", and no tuned copy could be loaded (" + why +
               "): every ratio against it is inflated; rerun with OPENBLAS_CORETYPE=" + want;
    return r;
  }();
  return b;
}

/// Row label: the core that ran the row.
inline std::string label(const library& lib, bool tuned_copy) {
  const std::string core = lib.core();
  if (tuned_copy) return "openblas:" + core + " (OPENBLAS_CORETYPE=" + probe().coretype + " copy)";
  return "openblas:" + core + (is_fallback(core) && !tuned_coretype().empty() ? " (fallback)" : "");
}

/// How far apart two float32 results of the same product are, against what rounding allows.
/// `worst` = max over elements of |x - y| / bound, bound = 2 gamma(k + 2) (|A| |B|)_i (both
/// results lie within gamma(k) (|A| |B|)_i of the exact one, in any summation order, with or
/// without FMA), widened by 1 % for the rounding of |A| |B| itself; ok = worst <= 1.
struct check_result {
  double worst = 0.0;
  bool ok = true;
};

inline check_result compare(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& abs_product,
                            int k) {
  const double u = std::ldexp(1.0, -24);
  const double kk = static_cast<double>(k) + 2.0;
  const double gamma = kk * u / (1.0 - kk * u);
  check_result r;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i]));
    // the second term: each result may also carry k + 2 subnormal-spacing roundings
    const double bound = 2.0 * gamma * 1.01 * static_cast<double>(abs_product[i]) + 2.0 * (kk + 1.0) * FLT_TRUE_MIN;
    const double q = std::isnan(d) ? HUGE_VAL : d / bound;
    r.worst = std::max(r.worst, q);
  }
  r.ok = r.worst <= 1.0;
  return r;
}

/// C = A B^T (A m x k, B n x k, row-major) by `ref` and by `other`.
inline check_result check_sgemm(const library& ref, const library& other, int m, int n, int k, const float* a, const float* b) {
  const auto mn = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
  std::vector<float> c1(mn), c2(mn), cabs(mn);
  std::vector<float> aa(a, a + static_cast<std::size_t>(m) * static_cast<std::size_t>(k));
  std::vector<float> ba(b, b + static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
  for (float& v : aa) v = std::fabs(v);
  for (float& v : ba) v = std::fabs(v);
  ref.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c1.data(), n);
  other.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c2.data(), n);
  ref.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, aa.data(), k, ba.data(), k, 0.0f, cabs.data(), n);
  return compare(c1, c2, cabs, k);
}

/// y = W x (W n x k, row-major) by `ref` and by `other`.
inline check_result check_sgemv(const library& ref, const library& other, int n, int k, const float* w, const float* x) {
  const auto nn = static_cast<std::size_t>(n);
  std::vector<float> y1(nn), y2(nn), yabs(nn);
  std::vector<float> wa(w, w + nn * static_cast<std::size_t>(k)), xa(x, x + static_cast<std::size_t>(k));
  for (float& v : wa) v = std::fabs(v);
  for (float& v : xa) v = std::fabs(v);
  ref.sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y1.data(), 1);
  other.sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y2.data(), 1);
  ref.sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, wa.data(), k, xa.data(), 1, 0.0f, yabs.data(), 1);
  return compare(y1, y2, yabs, k);
}

}  // namespace minifloat_bench::openblas
