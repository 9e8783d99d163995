#pragma once
// The corpus: raw bytes of a text file (byte-level tokens, vocabulary 256), split into a training
// part and the last 5 % as the validation part, and a deterministic batch sampler.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <minifloat/io/files.hpp>

#include "common.hpp"

namespace lm {

inline constexpr std::size_t vocab_size = 256;

struct corpus {
  std::vector<std::uint8_t> train, valid;
  std::string source;
};

/// Reads a text file; the last 5 % of its bytes (from byte floor(0.95 n)) are the validation set.
inline corpus load_corpus(const std::string& path, std::size_t context) {
  // checked before opening: a FIFO or a device would block the read or never end
  minifloat::require_regular_file(path, "a text file (--text)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw minifloat::io_error(minifloat::detail::path_text(path) + ": cannot open; expected a readable text file (--text)");
  std::vector<std::uint8_t> all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw minifloat::io_error(minifloat::detail::path_text(path) + ": read error; expected a readable text file (--text)");
  const std::size_t cut = all.size() / 20 * 19 + (all.size() % 20) * 19 / 20;  // floor(0.95 n)
  corpus c;
  c.source = path;
  c.train.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cut));
  c.valid.assign(all.begin() + static_cast<std::ptrdiff_t>(cut), all.end());
  if (c.valid.size() < context + 1 || c.train.size() < context + 1)
    throw minifloat::io_error(minifloat::detail::path_text(path) + ": has " + std::to_string(all.size()) +
                             " bytes: too short for context " + std::to_string(context) +
                             " (each part needs more than one window)");
  return c;
}

/// B windows of T + 1 tokens: inputs are tokens [0, T), targets [1, T]. Row-major (B, T).
struct batch {
  std::size_t b = 0, t = 0;
  std::vector<std::uint8_t> inputs, targets;
};

/// Training batch of step `step`: B windows at uniformly random offsets drawn from (seed, step),
/// so every recipe and every retry of a step sees the same data.
inline batch training_batch(const corpus& c, std::size_t b, std::size_t t, std::uint64_t seed, std::size_t step) {
  batch out;
  out.b = b, out.t = t;
  out.inputs.resize(b * t), out.targets.resize(b * t);
  rng r = stream(seed, 0x7261696EULL, step);
  const std::size_t span = c.train.size() - t - 1;
  for (std::size_t i = 0; i < b; ++i) {
    const std::size_t off = r.below(span + 1);
    for (std::size_t j = 0; j < t; ++j) {
      out.inputs[i * t + j] = c.train[off + j];
      out.targets[i * t + j] = c.train[off + j + 1];
    }
  }
  return out;
}

/// Consecutive windows of a byte string (stride T, every target predicted once), B at a time
/// from window `first`; the last batch may be smaller. Returns false when no window is left.
inline bool window_batch(const std::vector<std::uint8_t>& text, std::size_t b, std::size_t t, std::size_t first,
                         batch& out) {
  const std::size_t windows = (text.size() - 1) / t;
  if (first >= windows) return false;
  const std::size_t n = std::min(b, windows - first);
  out.b = n, out.t = t;
  out.inputs.resize(n * t), out.targets.resize(n * t);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < t; ++j) {
      const std::size_t off = (first + i) * t + j;
      out.inputs[i * t + j] = text[off];
      out.targets[i * t + j] = text[off + 1];
    }
  return true;
}

inline std::size_t window_count(const std::vector<std::uint8_t>& text, std::size_t t) { return (text.size() - 1) / t; }

}  // namespace lm
