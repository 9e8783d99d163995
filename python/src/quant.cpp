// Scaled and MX quantization (minifloat::quantize / quantize_with_scales / dequantize), the GEMM
// (exact and fp32_blocks references, the fast path) and the fidelity metrics of `minifloat
// analyze`, for numpy arrays. Buffers are read in place where their layout allows; the GIL is
// released while the library runs.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>

#include <minifloat/analysis/analysis.hpp>
#include <minifloat/core/checked.hpp>
#include <minifloat/analysis/metrics.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include "quant.hpp"

namespace minifloat::python {

flatten_mode parse_flatten_arg(const std::string& s, const char* who) {
  if (s == "last") return flatten_mode::last_axis;
  if (s == "first") return flatten_mode::first_axis;
  throw py::value_error(std::string(who) + ": flatten must be 'last' ((prod(leading), last) rows) or 'first' "
                        "((first, prod(rest)) rows), got '" + s + "'");
}

float_rows as_float_rows(const py::handle& x, const char* who, flatten_mode mode) {
  float_rows r;
  PyObject* obj = PyArray_FROM_O(x.ptr());
  if (obj == nullptr) throw py::error_already_set();
  auto a = py::reinterpret_steal<py::array>(obj);
  auto* pa = reinterpret_cast<PyArrayObject*>(obj);
  const int t = PyArray_TYPE(pa);
  const bool ok_type = t == NPY_FLOAT || t == NPY_DOUBLE || t == NPY_HALF || PyTypeNum_ISINTEGER(t) ||
                       PyTypeNum_ISBOOL(t) || format_of_typenum(t).has_value();
  if (!ok_type)
    throw py::type_error(std::string(who) + ": expected a real floating-point array (float32, float64, float16 or a "
                         "minifloat dtype), got dtype " + std::string(py::str(a.dtype())));
  if (PyArray_NDIM(pa) == 0)
    throw py::value_error(std::string(who) + ": expected an array with at least one dimension, got a 0-d array");
  r.shape.assign(a.shape(), a.shape() + a.ndim());
  const std::vector<std::size_t> dims(r.shape.begin(), r.shape.end());
  const auto [rows, cols] = matrix_shape(dims, mode);
  // float32 with contiguous rows: no copy (a 2-D slice of a wider matrix keeps its row stride).
  if (t == NPY_FLOAT && PyArray_ISALIGNED(pa) && PyArray_ISNOTSWAPPED(pa)) {
    const npy_intp* st = PyArray_STRIDES(pa);
    const int nd = PyArray_NDIM(pa);
    if (PyArray_IS_C_CONTIGUOUS(pa)) {
      r.keep = a;
      r.view = matrix_view<const float>(static_cast<const float*>(PyArray_DATA(pa)), rows, cols, cols);
      return r;
    }
    if (nd == 2 && mode == flatten_mode::last_axis && st[1] == 4 && st[0] > 0 && st[0] % 4 == 0 && static_cast<std::size_t>(st[0] / 4) >= cols) {
      r.keep = a;
      r.view = matrix_view<const float>(static_cast<const float*>(PyArray_DATA(pa)), rows, cols,
                                        static_cast<std::size_t>(st[0] / 4));
      return r;
    }
  }
  PyObject* c = PyArray_FromAny(obj, PyArray_DescrFromType(NPY_FLOAT), 0, 0,
                                NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, nullptr);
  if (c == nullptr) throw py::error_already_set();
  r.keep = py::reinterpret_steal<py::array>(c);
  r.view = matrix_view<const float>(static_cast<const float*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(c))), rows,
                                    cols, cols);
  return r;
}

namespace {

/// A read-only array over memory owned by `owner`.
py::array view_of(const py::dtype& dt, std::vector<py::ssize_t> shape, const void* data, const py::handle& owner) {
  py::array a(dt, std::move(shape), data, owner);
  PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(a.ptr()), NPY_ARRAY_WRITEABLE);
  return a;
}

py::dtype u8() { return py::dtype("uint8"); }

bool is_16bit(format_id f) { return f == format_id::bfloat16 || f == format_id::float16; }

py::array codes_of(const py_quantized& self, const py::handle& owner) {
  const auto& q = self.q;
  std::vector<py::ssize_t> shape = self.shape;
  if (self.flatten == flatten_mode::first_axis && shape.size() > 2)  // rows of the matrix, as the CLI writes them
    shape = {static_cast<py::ssize_t>(q.rows()), static_cast<py::ssize_t>(q.cols())};
  const format_id f = q.scheme().format;
  if (is_16bit(f)) return view_of(py::dtype("uint16"), shape, q.codes().data(), owner);
  shape.back() = static_cast<py::ssize_t>(detail::code_row_bytes(f, q.cols()));
  return view_of(u8(), shape, q.codes().data(), owner);
}

py::array scales_of(const py_quantized& self, const py::handle& owner) {
  const auto v = self.q.view();
  const std::vector<py::ssize_t> grid{static_cast<py::ssize_t>(v.scale_grid_rows()),
                                      static_cast<py::ssize_t>(v.scale_grid_cols())};
  if (v.scheme.gran == granularity::mx) return view_of(dtype_of(format_id::float8_e8m0fnu), grid, v.mx_scales.data(), owner);
  return view_of(py::dtype("float32"), grid, v.scales.data(), owner);
}

py::array dequantize_py(const py_quantized& self) {
  py::array_t<float> out(self.shape);
  float* dst = out.mutable_data();
  const auto v = self.q.view();
  {
    py::gil_scoped_release release;
    dequantize(v, std::span<float>(dst, static_cast<std::size_t>(v.rows * v.cols)));
  }
  return out;
}

quant_scheme scheme_from(const std::string& text, const std::optional<std::string>& round, std::uint64_t seed) {
  quant_scheme s = parse_scheme(text).scheme;
  if (round) s.round = parse_rounding_arg(*round, "quantize");
  s.seed = seed;
  s.validate();
  return s;
}

py_quantized wrap(quantized_tensor q, std::vector<py::ssize_t> shape, flatten_mode mode = flatten_mode::last_axis) {
  py_quantized r;
  r.name = scheme_name(q.scheme());
  r.q = std::move(q);
  r.shape = std::move(shape);
  r.flatten = mode;
  return r;
}

py_quantized quantize_py(const py::handle& x, const std::string& scheme, const std::optional<std::string>& round,
                         std::uint64_t seed, const std::string& flatten) {
  const quant_scheme s = scheme_from(scheme, round, seed);
  const flatten_mode mode = parse_flatten_arg(flatten, "quantize");
  float_rows in = as_float_rows(x, "quantize", mode);
  quantized_tensor q;
  {
    py::gil_scoped_release release;
    q = quantize(in.view, s);
  }
  return wrap(std::move(q), in.shape, mode);
}

py_quantized quantize_with_scales_py(const py::handle& x, const std::string& scheme, const py::handle& scales,
                                     const std::string& flatten) {
  const quant_scheme s = scheme_from(scheme, std::nullopt, 0);
  const flatten_mode mode = parse_flatten_arg(flatten, "quantize_with_scales");
  float_rows in = as_float_rows(x, "quantize_with_scales", mode);
  float_rows sc = as_float_rows(scales, "quantize_with_scales (scales)");
  std::vector<float> flat;
  flat.reserve(sc.view.size());
  for (std::size_t r = 0; r < sc.view.rows; ++r) flat.insert(flat.end(), sc.view.row(r), sc.view.row(r) + sc.view.cols);
  quantized_tensor q;
  {
    py::gil_scoped_release release;
    q = quantize_with_scales(in.view, s, flat);
  }
  return wrap(std::move(q), in.shape, mode);
}

py_quantized from_parts_py(const std::string& scheme, const std::vector<py::ssize_t>& shape, const py::handle& codes,
                           const py::handle& scales) {
  const quant_scheme s = parse_scheme(scheme).scheme;
  if (shape.empty()) throw py::value_error("QuantizedTensor.from_parts: shape needs at least one dimension");
  std::size_t total = 1;
  for (auto d : shape) {
    if (d < 0) throw py::value_error("QuantizedTensor.from_parts: negative dimension in shape");
    total = checked_mul(total, static_cast<std::size_t>(d), "QuantizedTensor.from_parts: the shape's element count");
  }
  const auto cols = static_cast<std::size_t>(shape.back());
  const std::size_t rows = cols == 0 ? 0 : total / cols;
  const auto bytes_of = [](const py::handle& h, const char* what) {
    PyObject* o = PyArray_FROM_OF(h.ptr(), NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    if (o == nullptr) throw py::error_already_set();
    auto a = py::reinterpret_steal<py::array>(o);
    (void)what;
    const auto* p = static_cast<const std::uint8_t*>(a.data());
    return std::vector<std::uint8_t>(p, p + a.nbytes());
  };
  std::vector<std::uint8_t> c = bytes_of(codes, "codes");
  std::vector<float> fs;
  std::vector<std::uint8_t> mx;
  if (s.gran == granularity::mx) {
    mx = bytes_of(scales, "scales");
  } else {
    float_rows sc = as_float_rows(scales, "QuantizedTensor.from_parts (scales)");
    for (std::size_t r = 0; r < sc.view.rows; ++r) fs.insert(fs.end(), sc.view.row(r), sc.view.row(r) + sc.view.cols);
  }
  return wrap(quantized_tensor::from_parts(s, rows, cols, std::move(c), std::move(fs), std::move(mx)), shape);
}

std::string repr_of(const py_quantized& self) {
  std::string shape = "(";
  for (std::size_t i = 0; i < self.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(self.shape[i]);
  if (self.shape.size() == 1) shape += ",";
  shape += ")";
  return "QuantizedTensor(scheme='" + self.name + "', shape=" + shape + ", " + self.q.scheme().describe() + ")";
}

// --- GEMM ----------------------------------------------------------------------------------------

py::array gemm_py(const py_quantized& a, const py_quantized& b, const std::string& order, const std::string& layout,
                  const py::object& bias, const py::handle& out_dtype, unsigned threads, const std::string& isa) {
  gemm_layout lay;
  if (layout == "nk") lay = gemm_layout::nk;
  else if (layout == "kn") lay = gemm_layout::kn;
  else throw py::value_error("gemm: layout must be 'nk' (B stored (N, K), like torch.nn.Linear.weight) or 'kn' (B stored (K, N)), got '" + layout + "'");
  enum class mode { exact, fp32_blocks, fast } md;
  if (order == "exact") md = mode::exact;
  else if (order == "fp32_blocks") md = mode::fp32_blocks;
  else if (order == "fast") md = mode::fast;
  else throw py::value_error("gemm: order must be 'exact', 'fp32_blocks' or 'fast', got '" + order + "'");
  bool bf16_out = false;
  if (!out_dtype.is_none()) {
    PyArray_Descr* d = nullptr;
    if (PyArray_DescrConverter2(out_dtype.ptr(), &d) == 0 || d == nullptr) {
      PyErr_Clear();
      throw py::type_error("gemm: out_dtype must be float32 or minifloat.bfloat16");
    }
    const int t = d->type_num;
    Py_DECREF(d);
    if (t == typenum_of(format_id::bfloat16)) bf16_out = true;
    else if (t != NPY_FLOAT) throw py::type_error("gemm: out_dtype must be float32 or minifloat.bfloat16");
  }
  std::vector<float> bias_v;
  if (!bias.is_none()) {
    float_rows br = as_float_rows(bias, "gemm (bias)");
    for (std::size_t r = 0; r < br.view.rows; ++r) bias_v.insert(bias_v.end(), br.view.row(r), br.view.row(r) + br.view.cols);
  }
  gemm_config cfg;
  cfg.threads = threads == 0 ? default_threads() : threads;
  cfg.isa = parse_isa_arg(isa, "gemm");
  const auto av = a.q.view(), bv = b.q.view();
  const std::size_t m = av.rows, n = lay == gemm_layout::nk ? bv.rows : bv.cols;
  const std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(m), static_cast<py::ssize_t>(n)};
  if (bf16_out) {
    PyObject* o = PyArray_Empty(2, const_cast<npy_intp*>(reinterpret_cast<const npy_intp*>(shape.data())),
                                PyArray_DescrFromType(typenum_of(format_id::bfloat16)), 0);
    if (o == nullptr) throw py::error_already_set();
    auto out = py::reinterpret_steal<py::array>(o);
    auto* dst = static_cast<bfloat16*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(o)));
    py::gil_scoped_release release;
    const std::span<bfloat16> s(dst, m * n);
    if (md == mode::fast) gemm(av, bv, lay, bias_v, s, cfg);
    else gemm_reference(av, bv, lay, bias_v, s, md == mode::exact ? gemm_accumulation::exact : gemm_accumulation::fp32_blocks);
    return out;
  }
  py::array_t<float> out(shape);
  float* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    const std::span<float> s(dst, m * n);
    if (md == mode::fast) gemm(av, bv, lay, bias_v, s, cfg);
    else gemm_reference(av, bv, lay, bias_v, s, md == mode::exact ? gemm_accumulation::exact : gemm_accumulation::fp32_blocks);
  }
  return out;
}

// --- metrics -------------------------------------------------------------------------------------

py::dict histogram_dict(const analysis::exponent_histogram& h) {
  py::dict bins;
  for (const auto& [e, c] : h.bins()) bins[py::int_(e)] = c;
  return bins;
}

py::dict stats_dict(const analysis::fidelity_stats& s) {
  py::dict d;
  d["sqnr_db"] = s.sqnr_db();
  d["mse"] = s.mse();
  d["max_abs_error"] = s.max_abs_error;
  d["max_rel_error"] = s.max_rel_error;
  d["zero_rate"] = s.zero_rate();
  d["count"] = s.count;
  d["finite_count"] = s.finite_count;
  d["nonzero_count"] = s.nonzero_count;
  d["zero_count"] = s.zero_count;
  d["overflow_count"] = s.overflow_count;
  d["underflow_count"] = s.underflow_count;
  d["nan_count"] = s.nan_count;
  d["nonfinite_inputs"] = s.nonfinite_inputs;
  d["signal_energy"] = s.signal_energy;
  d["noise_energy"] = s.noise_energy;
  if (const auto* p = s.profile()) {
    py::dict classes;
    for (std::size_t k = 0; k < p->classes.size(); ++k) {
      py::dict c;
      c["count"] = s.class_counts[k];
      c["share"] = s.class_share(k);
      classes[py::str(p->classes[k].label)] = c;
    }
    d["classes"] = classes;
    d["scaled_exponents"] = histogram_dict(s.scaled_exponents);
  }
  return d;
}

/// x and y as two float32 vectors of the same length (y may be a QuantizedTensor: dequantized).
struct pair_of_vectors {
  float_rows x;
  std::vector<float> x_flat, y_flat;
};

std::vector<float> flat_copy(const matrix_view<const float>& v) {
  std::vector<float> f;
  f.reserve(v.size());
  for (std::size_t r = 0; r < v.rows; ++r) f.insert(f.end(), v.row(r), v.row(r) + v.cols);
  return f;
}

pair_of_vectors vectors(const py::handle& x, const py::handle& y, const char* who) {
  pair_of_vectors p;
  p.x = as_float_rows(x, who);
  p.x_flat = flat_copy(p.x.view);
  if (py::isinstance<py_quantized>(y)) {
    const auto& q = y.cast<const py_quantized&>();
    p.y_flat = dequantize(q.q);
  } else {
    p.y_flat = flat_copy(as_float_rows(y, who).view);
  }
  if (p.x_flat.size() != p.y_flat.size())
    throw py::value_error(std::string(who) + ": x has " + std::to_string(p.x_flat.size()) + " elements but y has " +
                          std::to_string(p.y_flat.size()));
  return p;
}

py::dict measure_py(const py::handle& x, const py_quantized& q) {
  float_rows in = as_float_rows(x, "measure", q.flatten);
  const auto v = q.q.view();
  if (in.view.rows != v.rows || in.view.cols != v.cols)
    throw py::value_error("measure: x is " + std::to_string(in.view.rows) + "x" + std::to_string(in.view.cols) +
                          " (as rows), the quantized tensor " + std::to_string(v.rows) + "x" + std::to_string(v.cols));
  analysis::fidelity_stats s;
  {
    py::gil_scoped_release release;
    s = analysis::measure(in.view, v, analysis::profile_of(v.scheme.format));
  }
  py::dict d = stats_dict(s);
  d["scheme"] = q.name;
  d["scheme_string"] = to_scheme_string(v.scheme);
  return d;
}

py::dict analyze_py(const py::handle& x, const std::optional<std::vector<std::string>>& schemes,
                    const std::optional<std::string>& flatten) {
  std::vector<named_scheme> list;
  if (schemes) {
    for (const auto& s : *schemes) list.push_back(parse_scheme(s));
  } else {
    list = analysis::default_schemes();
  }
  flatten_mode mode;
  if (flatten) {
    mode = parse_flatten_arg(*flatten, "analyze");
  } else {  // the CLI's rule: 4-D (conv weights) by output channel, everything else by the last axis
    const py::array a = py::array::ensure(x);
    if (!a) throw py::type_error("analyze: expected an array");
    const std::vector<std::size_t> dims(a.shape(), a.shape() + a.ndim());
    mode = analysis_flatten(dims);
  }
  float_rows in = as_float_rows(x, "analyze", mode);
  std::vector<analysis::fidelity_stats> stats;
  {
    py::gil_scoped_release release;
    for (const auto& s : list) stats.push_back(analysis::measure(in.view, s.scheme, analysis::profile_of(s.scheme.format)));
  }
  py::dict out;
  for (std::size_t k = 0; k < list.size(); ++k) {
    py::dict d = stats_dict(stats[k]);
    d["scheme"] = list[k].name;
    d["scheme_string"] = to_scheme_string(list[k].scheme);
    out[py::str(list[k].name)] = d;
  }
  return out;
}

py::dict scheme_dict(const std::string& text) {
  const named_scheme n = parse_scheme(text);
  const quant_scheme& s = n.scheme;
  py::dict d;
  d["name"] = n.name;
  d["string"] = to_scheme_string(s);
  d["format"] = std::string(to_string(s.format));
  d["granularity"] = std::string(to_string(s.gran));
  d["block"] = py::make_tuple(s.block_rows, s.block_cols);
  d["axis"] = s.axis;
  d["scale_rule"] = std::string(to_string(s.rule));
  d["target"] = s.rule == scale_rule::pow2 ? py::object(py::int_(s.target)) : py::object(py::none());
  d["round"] = std::string(to_string(s.round));
  d["description"] = s.describe();
  d["cli_options"] = to_quantize_options(s);
  return d;
}

}  // namespace

void bind_quant(py::module_& m) {
  py::class_<py_quantized>(m, "QuantizedTensor", R"doc(Codes + scales + the scheme that made them.

codes:  uint8 array, the input's shape with the last axis in bytes: one code per byte for 8- and
        6-bit formats, FP4 two per byte (element 2i in the low nibble, 2i+1 in the high nibble,
        ceil(n / 2) bytes a row); uint16 for bfloat16 / float16 schemes. Read-only, no copy.
scales: fp32 scale grid (float32, shape (grid rows, grid cols)) or, for MX schemes, the E8M0
        scales as a float8_e8m0fnu array (axis 1: (rows, ceil(cols / 32)); axis 0: (ceil(rows / 32), cols)).
N-D input is quantized as (prod(leading dims), last dim), like the CLI.)doc")
      .def_property_readonly("codes", [](py::object self) { return codes_of(self.cast<const py_quantized&>(), self); })
      .def_property_readonly("scales", [](py::object self) { return scales_of(self.cast<const py_quantized&>(), self); })
      .def_property_readonly("scheme", [](const py_quantized& s) { return s.name; }, "The scheme's short name (alias form).")
      .def_property_readonly("scheme_string", [](const py_quantized& s) { return to_scheme_string(s.q.scheme()); },
                             "The scheme's long FORMAT/GRANULARITY/... spelling.")
      .def_property_readonly("format", [](const py_quantized& s) { return std::string(to_string(s.q.scheme().format)); })
      .def_property_readonly("dtype", [](const py_quantized& s) { return dtype_of(s.q.scheme().format); },
                             "The element format's dtype.")
      .def_property_readonly("granularity", [](const py_quantized& s) { return std::string(to_string(s.q.scheme().gran)); })
      .def_property_readonly("shape", [](const py_quantized& s) { return py::tuple(py::cast(s.shape)); })
      .def_property_readonly("rows", [](const py_quantized& s) { return s.q.rows(); })
      .def_property_readonly("cols", [](const py_quantized& s) { return s.q.cols(); })
      .def_property_readonly("nbytes", [](const py_quantized& s) {
        return s.q.codes().size() + s.q.mx_scales().size() + 4 * s.q.scales().size();
      }, "Bytes of codes and scales.")
      .def("dequantize", &dequantize_py, "The values the tensor stands for, float32, in the input's shape.")
      .def("__repr__", &repr_of)
      .def_static("from_parts", &from_parts_py, py::arg("scheme"), py::arg("shape"), py::arg("codes"), py::arg("scales"),
                  "Adopts codes and scales (e.g. read from files) laid out as .codes / .scales are; raises "
                  "ValueError if a size does not fit the scheme and shape.");

  m.def("quantize", &quantize_py, py::arg("x"), py::arg("scheme"), py::kw_only(), py::arg("round") = py::none(),
        py::arg("seed") = 0, py::arg("flatten") = "last",
        R"doc(Quantizes x under a scheme string of the CLI (e.g. "mxfp8_e4m3", "hifloat8/tensor",
"float8_e4m3fn/block128", "float4_e2m1fn/mx/axis=0", "float8_e5m2/channel/round=toward_zero").
x is read as float32 (in place when its rows are contiguous float32). round overrides the
scheme's rounding (stochastic included, with seed: element (r, c) uses random_bits(seed, r * cols + c));
MX elements only take nearest / nearest_even. Always saturating. flatten: N-D x as the matrix
(prod(leading), last) ("last", the default) or (first, prod(rest)) ("first": conv weights, the
CLI's --flatten first). Returns a QuantizedTensor.)doc");
  m.def("quantize_with_scales", &quantize_with_scales_py, py::arg("x"), py::arg("scheme"), py::arg("scales"),
        py::kw_only(), py::arg("flatten") = "last",
        "Static scaling: quantizes with the given fp32 scales (one per group of the scale grid, row-major) "
        "instead of computing them. Not for MX schemes.");
  m.def("dequantize", [](const py_quantized& q) { return dequantize_py(q); }, py::arg("q"), "q.dequantize().");
  m.def("gemm", &gemm_py, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("order") = "fast", py::arg("layout") = "nk",
        py::arg("bias") = py::none(), py::arg("out_dtype") = py::none(), py::arg("threads") = 0,
        py::arg("isa") = "automatic",
        R"doc(C = A @ B (+ bias) on quantized operands: A (M, K); B stored (N, K) with layout="nk" (the
torch.nn.Linear.weight layout, the default) or (K, N) with layout="kn".
order: "exact" (exact products and sum, one rounding), "fp32_blocks" (the hardware order: fp32
partial sums per K block, scaled and accumulated in fp32) or "fast" (the SIMD GEMM, bit-identical
to fp32_blocks, whatever the thread count; threads 0 = minifloat.get_num_threads()). Returns
float32 (M, N), or bfloat16 with out_dtype=minifloat.bfloat16.)doc");
  m.def("sqnr", [](const py::handle& x, const py::handle& y) {
    const auto p = vectors(x, y, "sqnr");
    return analysis::measure_error(p.x_flat, p.y_flat).sqnr_db();
  },
        py::arg("x"), py::arg("y"),
        "10 log10(sum x^2 / sum (x - y)^2) in dB over the finite x (+inf when exact); y: an array of x's size or a "
        "QuantizedTensor (dequantized).");
  m.def("zero_rate", [](const py::handle& x, const py::handle& y) {
    const auto p = vectors(x, y, "zero_rate");
    return analysis::measure_error(p.x_flat, p.y_flat).zero_rate();
  }, py::arg("x"), py::arg("y"), "Share of the finite non-zero x whose y is 0.");
  m.def("error_metrics", [](const py::handle& x, const py::handle& y) {
    const auto p = vectors(x, y, "error_metrics");
    return stats_dict(analysis::measure_error(p.x_flat, p.y_flat));
  }, py::arg("x"), py::arg("y"), "SQNR, MSE, max errors, zero-rate and counts of y against x, as a dict.");
  m.def("measure", &measure_py, py::arg("x"), py::arg("q"),
        "Every metric of `minifloat analyze` for the QuantizedTensor q made from x, as a dict (precision classes "
        "and scaled exponents included).");
  m.def("analyze", &analyze_py, py::arg("x"), py::arg("schemes") = py::none(), py::kw_only(),
        py::arg("flatten") = py::none(),
        "Quantizes x under each scheme (default: the CLI's default set) and returns {scheme name: metrics dict}, "
        "the numbers of `minifloat analyze --json`. flatten None: the CLI's rule (4-D tensors as (first, "
        "prod(rest)), others as (prod(leading), last)); or 'last' / 'first'.");
  m.def("parse_scheme", &scheme_dict, py::arg("scheme"), "A scheme string's fields, as a dict (raises ValueError).");
  m.def("default_schemes", [] {
    std::vector<std::string> v;
    for (auto s : analysis::default_scheme_strings) v.emplace_back(s);
    return v;
  }, "The schemes `minifloat analyze` compares by default.");
}

}  // namespace minifloat::python
