#pragma once
// The same small workload for the header-only and the compiled-kernels consumer: quantize,
// GEMM (fast and reference), dequantize. It prints one checksum line, the bits of every result:
// both consumers must print the same line (RunInstallConsumer.cmake compares them).
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

inline bool run_workload() {
  using namespace minifloat;
  const std::size_t m = 5, n = 24, k = 64;
  std::vector<float> a(m * k), b(n * k);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i) * 0.37f);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<float>(i) * 0.11f);
  const auto qa = quantize(a, m, k, parse_scheme("mxfp8_e4m3").scheme), qb = quantize(b, n, k, parse_scheme("hifloat8/channel").scheme);
  std::vector<float> fast(m * n), ref(m * n);
  gemm(qa.view(), qb.view(), gemm_layout::nk, {}, fast);
  gemm_reference(qa.view(), qb.view(), gemm_layout::nk, {}, ref, gemm_accumulation::fp32_blocks);
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the result bits
  const auto mix = [&](float x) {
    h = (h ^ std::bit_cast<std::uint32_t>(x)) * 1099511628211ULL;
  };
  for (const float x : fast) mix(x);
  for (const float x : dequantize(qa)) mix(x);
  std::cout << "checksum " << std::hex << h << std::dec << '\n';
  return fast == ref;
}
