// bench_mpi_allreduce: the quantized all_reduce (comm/mpi.hpp) against MPI_Allreduce on fp32 and
// on bf16, under mpirun (bench/mpi/run.sh runs 2 and 4 ranks). Not a Google Benchmark binary:
// every rank must run the same iterations, so the timing loop is fixed (barrier, call, barrier;
// the median over --reps of the slowest rank).
//
//   mpirun -n P bench_mpi_allreduce [--sizes 1M,4M,16M,64M] [--reps 5]
//
// Per size and method: wall time, bytes this rank sent (ours: counted; MPI_Allreduce: the
// 2 (P-1)/P n b of a bandwidth-optimal algorithm), the measured quantize + dequantize +
// accumulate time of the whole collective per element and rank, the SQNR of the result against
// the exact fp64 sum of the contributions, and a network model: bytes / bandwidth (+ the
// measured codec time for ours) at 25, 100 and 400 Gb/s, with the bandwidth below which
// quantizing pays: bytes saved / codec time.
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <ctime>

#include <minifloat/comm/codec.hpp>
#include <minifloat/comm/mpi.hpp>
#include <minifloat/formats/convert.hpp>
#include <minifloat/simd/bulk.hpp>

namespace mf = minifloat;
namespace mc = minifloat::comm;

namespace {

/// Gradient-like contribution of rank r: Gaussian-ish, magnitudes spread over 2^-6 .. 2^6,
/// computable element by element (rank 0 recomputes every rank's for the exact sum).
float contribution(std::uint64_t r, std::uint64_t i) {
  std::uint64_t z = (r + 1) * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 40) * 0x1.0p-24;            // [0, 1)
  const double g = (static_cast<double>((z >> 8) & 0xFFFFU) - 32767.5) / 18918.0;  // ~uniform, var 1
  const int e = static_cast<int>((z >> 24) & 0xFU) - 8;                 // per-element binade
  return static_cast<float>((u - 0.5 + g) * std::ldexp(1.0, e / 2 + (i % 1024 < 8 ? 4 : 0)));
}

void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float s = static_cast<float>(mf::bfloat16::from_bits(a[i])) + static_cast<float>(mf::bfloat16::from_bits(b[i]));
    b[i] = mf::narrow<mf::bfloat16>(s).bits();
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double slowest(double t) {
  double m = 0.0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

struct row {
  std::string method;
  double seconds = 0, codec = 0, bytes = 0, sqnr = 0;
};

/// CPU time of the calling thread: what the codec costs even when the (shared) machine deschedules it.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// One rank's codec work in an all_reduce of n elements over p ranks (no MPI): quantize the
/// contribution, dequantize + sum p shards and quantize the sum (fused), dequantize the whole
/// result. Thread CPU seconds, median of `reps`.
double codec_alone(const std::vector<float>& x, std::size_t p, const mc::recipe& r, int reps) {
  const std::size_t n = x.size();
  const auto sh = mc::shard_range(n, p, r.chunk, 0);
  const mc::recipe rg = r.gather_recipe();
  std::vector<std::uint8_t> send(mc::flat_body_bytes(n, r) + 64 * p), shard(mc::flat_body_bytes(sh.size(), rg));
  std::vector<float> out(n);
  std::vector<double> t;
  for (int k = 0; k <= reps; ++k) {
    const double t0 = thread_cpu_seconds();
    std::size_t at = 0;
    for (std::size_t j = 0; j < p; ++j) {
      const auto s = mc::shard_range(n, p, r.chunk, j);
      const std::size_t b = mc::flat_body_bytes(s.size(), r);
      (void)mc::encode_flat(std::span<const float>(x).subspan(s.begin, s.size()), r, std::span(send).subspan(at, b));
      at += b;
    }
    const std::size_t b0 = mc::flat_body_bytes(sh.size(), r);
    const std::vector<std::span<const std::uint8_t>> bodies(p, std::span<const std::uint8_t>(send).first(b0));  // p shards of that size
    (void)mc::reduce_encode_flat(bodies, sh.size(), r, rg, shard);
    const bool streamed = mc::streams_output(rg, n);
    for (std::size_t j = 0; j < p; ++j) {  // every rank's reduced shard (here: this one's, p times)
      const auto s = mc::shard_range(n, p, r.chunk, j);
      const auto d = std::span(out).subspan(s.begin, std::min(s.size(), sh.size()));
      mc::decode_flat(std::span<const std::uint8_t>(shard).first(mc::flat_body_bytes(d.size(), rg)), rg, d, streamed);
    }
    if (streamed) mf::simd::stream_fence();
    if (k > 0) t.push_back(thread_cpu_seconds() - t0);  // k = 0 warms up
  }
  return median(t);
}

std::vector<mc::recipe> bench_recipes() {
  std::vector<mc::recipe> v;
  for (const auto f : {mc::wire_format::fp32, mc::wire_format::bf16, mc::wire_format::hif8, mc::wire_format::e4m3,
                       mc::wire_format::mxfp8_e4m3})
    v.push_back(mc::recipe::of(f, 1024));
  v.push_back(mc::recipe::of(mc::wire_format::hif8, 1024));
  v.back().gather = mc::wire_format::bf16;
  return v;
}

std::size_t parse_size(std::string_view s) {
  std::size_t mult = 1;
  if (!s.empty() && (s.back() == 'M' || s.back() == 'K')) mult = s.back() == 'M' ? (1U << 20) : (1U << 10), s.remove_suffix(1);
  std::size_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v * mult;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::size_t p = mc::detail::comm_size(MPI_COMM_WORLD), me = mc::detail::comm_rank(MPI_COMM_WORLD);
  std::vector<std::size_t> sizes = {1U << 20, 4U << 20, 16U << 20, 64U << 20};
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i], v = argv[i + 1];
    if (a == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    if (a == "--sizes") {
      sizes.clear();
      for (std::size_t b = 0; b <= v.size();) {
        const std::size_t e = std::min(v.find(',', b), v.size());
        sizes.push_back(parse_size(v.substr(b, e - b)));
        b = e + 1;
      }
    }
  }
  MPI_Datatype bf16_type;
  MPI_Type_contiguous(2, MPI_BYTE, &bf16_type);
  MPI_Type_commit(&bf16_type);
  MPI_Op bf16_op;
  MPI_Op_create(&bf16_sum, 1, &bf16_op);

  if (me == 0)
    std::printf("ranks %zu, medians of %d runs (slowest rank each run)\n\n"
                "| n | method | wall ms | MB sent/rank | vs fp32 bytes | codec ns/elem/rank | codec ns/byte saved | SQNR dB | model ms 25 / 100 / 400 Gb/s | pays below |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n",
                p, reps);
  for (const std::size_t n : sizes) {
    std::vector<float> x(n), out(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = contribution(me, i);
    std::vector<double> exact;
    if (me == 0) {
      exact.assign(n, 0.0);
      for (std::size_t r = 0; r < p; ++r)
        for (std::size_t i = 0; i < n; ++i) exact[i] += contribution(r, i);
    }
    const auto sqnr = [&](const std::vector<float>& got) {
      if (me != 0) return 0.0;
      double e = 0.0, s = 0.0;
      for (std::size_t i = 0; i < n; ++i) e += (got[i] - exact[i]) * (got[i] - exact[i]), s += exact[i] * exact[i];
      return e == 0.0 ? 999.0 : 10.0 * std::log10(s / e);
    };
    std::vector<row> rows;
    {  // MPI_Allreduce fp32
      std::vector<double> t;
      for (int k = 0; k < reps; ++k) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Allreduce(x.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t.push_back(slowest(MPI_Wtime() - t0));
      }
      rows.push_back({"MPI_Allreduce fp32", median(t), 0.0, mc::plain_all_reduce_bytes(n, p, 4), sqnr(out)});
    }
    {  // MPI_Allreduce bf16 (contributions already bf16; the sum rounds to bf16 at every add)
      std::vector<std::uint16_t> xb(n), ob(n);
      mf::simd::check(mf::simd::encode<mf::bfloat16>(x, std::span<std::uint16_t>(xb), mf::saturating), "bench");
      std::vector<double> t;
      for (int k = 0; k < reps; ++k) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Allreduce(xb.data(), ob.data(), static_cast<int>(n), bf16_type, bf16_op, MPI_COMM_WORLD);
        t.push_back(slowest(MPI_Wtime() - t0));
      }
      mf::simd::check(mf::simd::decode<mf::bfloat16>(std::span<const std::uint16_t>(ob), out), "bench");
      rows.push_back({"MPI_Allreduce bf16", median(t), 0.0, mc::plain_all_reduce_bytes(n, p, 2), sqnr(out)});
    }
    for (const auto& r : bench_recipes()) {
      std::vector<double> t, c;
      std::size_t sent = 0;
      for (int k = 0; k < reps; ++k) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        const auto res = mc::all_reduce(x, out, r, MPI_COMM_WORLD);
        t.push_back(slowest(MPI_Wtime() - t0));
        c.push_back(slowest(res.codec_seconds));
        sent = res.bytes_sent;
      }
      rows.push_back({"comm::all_reduce " + r.describe(), median(t), median(c), static_cast<double>(sent), sqnr(out)});
    }
    // the codec alone: rank 0 on its own core while the others wait
    std::vector<double> alone;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0)
      for (const auto& r : bench_recipes()) alone.push_back(codec_alone(x, p, r, reps));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me != 0) continue;
    for (std::size_t k = 0; k < alone.size(); ++k) rows[2 + k].codec = alone[k];
    const double fp32_bytes = rows[0].bytes;
    for (const auto& rw : rows) {
      std::string model;
      for (const double gbps : {25.0, 100.0, 400.0}) {
        char b[32];
        std::snprintf(b, sizeof b, "%s%.2f", model.empty() ? "" : " / ", 1e3 * (rw.bytes * 8.0 / (gbps * 1e9) + rw.codec));
        model += b;
      }
      std::string pays = "-", per_byte = "-";
      if (rw.codec > 0.0 && fp32_bytes > rw.bytes) per_byte = std::to_string(1e9 * rw.codec / (fp32_bytes - rw.bytes)).substr(0, 5);
      if (rw.codec > 0.0) {
        const double saved = fp32_bytes - rw.bytes;
        char b[48];
        if (saved <= 0.0) std::snprintf(b, sizeof b, "never (saves nothing)");
        else std::snprintf(b, sizeof b, "%.0f Gb/s", saved * 8.0 / rw.codec / 1e9);
        pays = b;
      }
      std::printf("| %zuM | %s | %.2f | %.2f | %.3f | %s | %s | %.1f | %s | %s |\n", n >> 20, rw.method.c_str(), 1e3 * rw.seconds,
                  rw.bytes / 1e6, rw.bytes / fp32_bytes,
                  rw.codec > 0.0 ? std::to_string(1e9 * rw.codec / static_cast<double>(n)).substr(0, 5).c_str() : "-",
                  per_byte.c_str(), rw.sqnr, model.c_str(), pays.c_str());
    }
  }
  if (me == 0)
    std::printf("\ncodec = one rank's quantize + dequantize + accumulate of the whole collective, in thread CPU time (rank 0,\n"
                "the others waiting; CPU time so that a loaded machine does not inflate it). model = bytes sent / link bandwidth (+ the measured codec time for comm::all_reduce); 'pays below' = the\n"
                "bandwidth under which the bytes saved against fp32 take longer to send than the codec takes to run.\n");
  MPI_Op_free(&bf16_op);
  MPI_Type_free(&bf16_type);
  MPI_Finalize();
  return 0;
}
