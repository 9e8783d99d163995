#pragma once
// Tensor files for tools: expands command-line paths (a directory means every .npy and
// .safetensors file directly inside it, sorted by name), lists the tensors they hold, loads one
// as float32, and flattens any shape to the 2-D matrix quantizers work on.
//
// Matrix view of an N-D shape (the rows are what "channel"/"token" granularity scales):
//   0-D            1 x 1
//   1-D (n)        1 x n          one row
//   4-D (O,I,h,w)  O x (I*h*w)    a convolution weight: one row per output channel
//   other N-D      prod(leading) x last
#include "../core/checked.hpp"
#include "error.hpp"
#include "files.hpp"
#include "npy.hpp"
#include "safetensors.hpp"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minifloat {

enum class tensor_file_kind : std::uint8_t { npy, safetensors };

/// One tensor found in the inputs (not loaded yet).
struct tensor_source {
  std::string name;              // display name: the .npy file's stem, or the safetensors tensor name
  std::filesystem::path file;
  tensor_file_kind kind = tensor_file_kind::npy;
  std::string tensor;            // name inside a .safetensors file ("" for .npy)
  std::vector<std::size_t> shape;  // known up front for .safetensors; filled by load for .npy
  std::string dtype;             // as the file spells it ("F32"); "" for .npy until loaded
  /// .safetensors: the file's header as list_tensor_sources parsed it, shared by all the file's
  /// sources, and this tensor's place in it, so that load_tensor reads only the tensor's bytes
  /// (parsing the header per tensor made N tensors cost N header parses). Null for a source built
  /// by hand: load_tensor then parses the header itself.
  std::shared_ptr<const safetensors_header> header;
  std::size_t header_index = 0;
};

/// A tensor in memory as float32, with its original shape and its matrix view.
struct loaded_tensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::string dtype;
  std::size_t rows = 0, cols = 0;
  std::vector<float> values;  // rows * cols, row-major
  std::size_t float32_overflows = 0;  // finite float64 elements too large for float32 (now +-Inf)
};

/// How an N-D tensor becomes the rows x cols matrix that scales are laid over.
enum class flatten_mode : std::uint8_t {
  /// (prod(leading dims), last dim): `minifloat quantize`'s documented default; right for
  /// activations (tokens x features) and Linear weights.
  last_axis,
  /// (first dim, prod(remaining dims)): conv weights (O, I, kh, kw) become (O, I*kh*kw), so
  /// "channel" means output channel.
  first_axis,
};

/// The mode `minifloat analyze` uses: first_axis for 4-D tensors (conv weights), last_axis
/// otherwise. Its JSON/CSV record the resulting rows x cols.
[[nodiscard]] constexpr flatten_mode analysis_flatten(std::span<const std::size_t> shape) noexcept {
  return shape.size() == 4 ? flatten_mode::first_axis : flatten_mode::last_axis;
}

namespace detail {
/// prod(shape[first, last)), a shape_error if it does not fit in std::size_t. Unlike the element
/// count, a zero extent elsewhere does not excuse it: the factor itself is a matrix extent.
[[nodiscard]] inline std::size_t extent_product(std::span<const std::size_t> shape, std::size_t first,
                                                std::size_t last) {
  std::size_t r = 1;
  for (std::size_t i = first; i < last; ++i) {
    const auto p = checked_mul_or(r, shape[i]);
    if (!p) {
      std::string text;
      for (std::size_t j = first; j < last; ++j) text += (j == first ? "" : " x ") + std::to_string(shape[j]);
      throw shape_error("matrix view: " + text + " does not fit in a 64-bit size; expected a shape whose rows and "
                        "columns are representable");
    }
    r = *p;
  }
  return r;
}
}  // namespace detail

/// Rows x cols of the matrix view of `shape`: a scalar is 1x1 and a 1-D tensor one row. A row
/// or column count beyond std::size_t is a shape_error.
[[nodiscard]] inline std::pair<std::size_t, std::size_t> matrix_shape(std::span<const std::size_t> shape,
                                                                      flatten_mode mode) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {1, shape[0]};
  if (mode == flatten_mode::first_axis) return {shape[0], detail::extent_product(shape, 1, shape.size())};
  return {detail::extent_product(shape, 0, shape.size() - 1), shape.back()};
}

/// The matrix view analyze uses (analysis_flatten).
[[nodiscard]] inline std::pair<std::size_t, std::size_t> matrix_shape(std::span<const std::size_t> shape) {
  return matrix_shape(shape, analysis_flatten(shape));
}

namespace detail {
[[nodiscard]] inline bool has_extension(const std::filesystem::path& p, std::string_view ext) {
  return p.extension().string() == ext;
}
}  // namespace detail

/// Files named by the arguments: each directory becomes its .npy/.safetensors files (not
/// recursive), sorted by file name; files are kept in argument order and must end in .npy or
/// .safetensors. A missing path, or a directory with no tensor file, is an io_error.
[[nodiscard]] inline std::vector<std::filesystem::path> expand_tensor_paths(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const auto& a : args) {
    const fs::path p(a);
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st))
      throw io_error(detail::printable_text(a) +
                     ": no such file or directory; expected a .npy or .safetensors file or a directory");
    if (fs::is_directory(st)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(p)) {
        if (!e.is_regular_file()) continue;
        if (detail::has_extension(e.path(), ".npy") || detail::has_extension(e.path(), ".safetensors"))
          found.push_back(e.path());
      }
      if (found.empty()) throw io_error(detail::printable_text(a) + ": directory holds no .npy or .safetensors file");
      std::sort(found.begin(), found.end(),
                [](const fs::path& x, const fs::path& y) { return x.filename().string() < y.filename().string(); });
      out.insert(out.end(), found.begin(), found.end());
    } else {
      if (!detail::has_extension(p, ".npy") && !detail::has_extension(p, ".safetensors"))
        throw io_error(detail::printable_text(a) + ": unknown file type; expected a name ending in .npy or .safetensors");
      require_regular_file(p, "a .npy or .safetensors file");
      out.push_back(p);
    }
  }
  return out;
}

/// The tensors in `files`: one per .npy file, and each floating-point tensor (F32, F16, BF16,
/// F8_E4M3, F8_E5M2, F64) of a .safetensors file in name order; other dtypes are reported in `skipped` (as
/// "file:tensor (DTYPE)") rather than failing. safetensors headers are validated here, each parsed
/// once: the sources keep it for load_tensor.
/// Display names that would repeat get their parent folder (and file) as a prefix.
[[nodiscard]] inline std::vector<tensor_source> list_tensor_sources(const std::vector<std::filesystem::path>& files,
                                                                    std::vector<std::string>* skipped = nullptr) {
  std::vector<tensor_source> out;
  std::size_t st_files = 0;
  for (const auto& f : files)
    if (detail::has_extension(f, ".safetensors")) ++st_files;
  for (const auto& f : files) {
    if (detail::has_extension(f, ".safetensors")) {
      const auto h = std::make_shared<const safetensors_header>(read_safetensors_header(f));
      std::vector<const safetensors_tensor_info*> ts;
      for (const auto& t : h->tensors) ts.push_back(&t);
      std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->name < b->name; });
      for (const auto* t : ts) {
        if (!safetensors_is_float(t->dtype)) {
          if (skipped)
            skipped->push_back(f.string() + ":" + t->name + " (" + std::string(safetensors_dtype_name(t->dtype)) + ")");
          continue;
        }
        tensor_source s;
        s.name = st_files > 1 ? f.stem().string() + ":" + t->name : t->name;
        s.file = f, s.kind = tensor_file_kind::safetensors, s.tensor = t->name;
        s.shape = t->shape, s.dtype = std::string(safetensors_dtype_name(t->dtype));
        s.header = h, s.header_index = static_cast<std::size_t>(t - h->tensors.data());
        out.push_back(std::move(s));
      }
    } else {
      tensor_source s;
      s.name = f.stem().string();
      s.file = f, s.kind = tensor_file_kind::npy;
      out.push_back(std::move(s));
    }
  }
  std::map<std::string, int> seen;
  for (const auto& s : out) ++seen[s.name];
  for (auto& s : out)
    if (seen[s.name] > 1) s.name = (s.file.parent_path().filename() / s.file.stem()).string() + (s.tensor.empty() ? "" : ":" + s.tensor);
  return out;
}

/// Loads one tensor as float32 (.npy: float32, float64 or float16; .safetensors: F32, F16, BF16,
/// F8_E4M3, F8_E5M2, F64).
[[nodiscard]] inline loaded_tensor load_tensor(const tensor_source& s) {
  loaded_tensor t;
  t.name = s.name;
  if (s.kind == tensor_file_kind::npy) {
    const npy_array a = read_npy(s.file);
    if (!npy_is_float(a.dtype))
      throw io_error(detail::path_text(s.file) + ": dtype '" + std::string(npy_descr(a.dtype)) +
                     "' is not floating point; expected '<f4', '<f8' or '<f2'");
    t.values = to_float32(a, s.file.string(), &t.float32_overflows);
    t.shape = a.shape;
    t.dtype = std::string(npy_dtype_name(a.dtype));
  } else {
    // read_safetensors_bytes checks that the file still has the size this header describes.
    std::shared_ptr<const safetensors_header> h = s.header;
    if (!h) h = std::make_shared<const safetensors_header>(read_safetensors_header(s.file));
    const safetensors_tensor_info* info =
        s.header_index < h->tensors.size() && h->tensors[s.header_index].name == s.tensor ? &h->tensors[s.header_index]
                                                                                           : h->find(s.tensor);
    if (info == nullptr)
      throw io_error(detail::path_text(s.file) + ": no tensor \"" + detail::printable_text(s.tensor) + "\" (file changed?)");
    t.values = safetensors_to_float32(info->dtype, read_safetensors_bytes(s.file, *h, *info),
                                      s.file.string() + ":" + s.tensor, &t.float32_overflows);
    t.shape = info->shape;
    t.dtype = std::string(safetensors_dtype_name(info->dtype));
  }
  std::tie(t.rows, t.cols) = matrix_shape(t.shape);
  return t;
}

}  // namespace minifloat
