// Per-tensor scaling recipes: amax_scaling (amax -> scale rules), current_scaling and
// delayed_scaling (include/minifloat/recipes/), with the same step() / skip_step() protocol.
#include <minifloat/recipes/current_scaling.hpp>
#include <minifloat/recipes/delayed_scaling.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include "quant.hpp"

namespace minifloat::python {

namespace {

tensor_role role_arg(const std::string& s) {
  if (auto r = parse_tensor_role(s)) return *r;
  throw py::value_error("unknown tensor role '" + s + "'; expected weight, activation or gradient");
}

format_id format_arg(const py::handle& f) { return parse_format_arg(f, "amax_scaling"); }

py::dict step_dict(const step_result& r) {
  py::dict d;
  d["scale"] = r.scale;
  d["amax"] = r.amax;
  d["nonfinite"] = r.nonfinite;
  d["overflow"] = r.overflow;
  d["skip"] = r.skip;
  d["current"] = r.current;
  d["updated"] = r.updated;
  return d;
}

step_result step_from(const py::handle& h) {
  if (py::isinstance<step_result>(h)) return h.cast<step_result>();
  if (py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) {
    step_result r;
    r.scale = h.cast<float>();
    if (!(r.scale > 0.0f) || !std::isfinite(r.scale))
      throw py::value_error("scale must be finite and positive, got " + std::to_string(r.scale));
    return r;
  }
  throw py::type_error("expected a step_result (from step()) or a scale (float)");
}

/// quantize_step with the recipe's scheme; x keeps its shape in the result.
py_quantized quantize_with(const py::handle& x, const quant_scheme& s, const step_result& r) {
  float_rows in = as_float_rows(x, "quantize");
  py_quantized out;
  {
    py::gil_scoped_release release;
    out.q = quantize_step(in.view, s, r);
  }
  out.shape = in.shape;
  out.name = scheme_name(s);
  out.flatten = flatten_mode::last_axis;
  return out;
}

py::array fake_quantize_with(const py::handle& x, const quant_scheme& s, const step_result& r) {
  float_rows in = as_float_rows(x, "fake_quantize");
  py::array_t<float> out(in.shape);
  std::vector<float> v;
  {
    py::gil_scoped_release release;
    v = fake_quantize_step(in.view, s, r);
  }
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

template <class Recipe>
step_result step_py(Recipe& self, const py::object& x, const py::object& amax, std::size_t nonfinite) {
  if (!x.is_none() && !amax.is_none())
    throw py::value_error("step: pass either x (a tensor) or amax= (precomputed statistics), not both");
  if (!amax.is_none()) {
    amax_stats st;
    st.amax = amax.cast<float>();
    st.nonfinite = nonfinite;
    if (!(st.amax >= 0.0f)) throw py::value_error("step: amax must be >= 0 (the finite amax), got " + std::to_string(st.amax));
    return self.step(st);
  }
  if (x.is_none()) throw py::type_error("step: expected the step's tensor x (or amax=)");
  float_rows in = as_float_rows(x, "step");
  py::gil_scoped_release release;
  return self.step(in.view);
}

}  // namespace

void bind_recipes(py::module_& m) {
  py::class_<amax_scaling>(m, "amax_scaling", R"doc(How one amax becomes one fp32 scale s (x ~ s * decode(q)).

Rules (scale_rule names): pow2 (HiF8 guard rule: s = 2^(floor(log2 amax) - (15 - n_guard))) and max (FP8, TE:
s = amax * 2^margin / dst_max). Build one with the static constructors.)doc")
      .def_static("hif8_guard", [](int n_guard) { return amax_scaling::hif8_guard(n_guard); }, py::arg("n_guard") = 11)
      .def_static("hif8_role", [](const std::string& role) { return amax_scaling::hif8_guard(role_arg(role)); },
                  py::arg("role"), "The HiF8 guard rule with the role's N_guard (11 weight, 10 activation/gradient).")
      .def_static("fp8_max", [](const py::handle& f, int margin) { return amax_scaling::fp8_max(format_arg(f), margin); },
                  py::arg("format"), py::arg("margin") = 0)
      .def_static("fp8_hybrid", [](const std::string& role, int margin) { return amax_scaling::fp8_hybrid(role_arg(role), margin); },
                  py::arg("role"), py::arg("margin") = 0, "E4M3 for weights/activations, E5M2 for gradients (TE HYBRID).")
      .def_static("max_to", [](const py::handle& f, float dst) { return amax_scaling::max_to(format_arg(f), dst); },
                  py::arg("format"), py::arg("dst_max"))
      .def_static("mindspeed_hif8", [](const std::string& role) { return amax_scaling::mindspeed_hif8(role_arg(role)); },
                  py::arg("role"))
      .def_property_readonly("format", [](const amax_scaling& a) { return std::string(to_string(a.format)); })
      .def_property_readonly("rule", [](const amax_scaling& a) { return std::string(to_string(a.rule)); })
      .def_readonly("n_guard", &amax_scaling::n_guard)
      .def_readonly("margin", &amax_scaling::margin)
      .def_readonly("dst_max", &amax_scaling::dst_max)
      .def_property_readonly("target", &amax_scaling::target)
      .def("scale", &amax_scaling::scale, py::arg("amax"), "s for a tensor with this finite amax (1 for amax 0).")
      .def_property_readonly("scheme", [](const amax_scaling& a) { return to_scheme_string(a.scheme()); })
      .def("describe", &amax_scaling::describe)
      .def("__repr__", [](const amax_scaling& a) { return "amax_scaling(" + a.describe() + ")"; });

  py::class_<step_result>(m, "step_result", "What a recipe decided for one step of one tensor.")
      .def_readonly("scale", &step_result::scale)
      .def_readonly("amax", &step_result::amax)
      .def_readonly("nonfinite", &step_result::nonfinite)
      .def_readonly("overflow", &step_result::overflow)
      .def_readonly("skip", &step_result::skip)
      .def_readonly("current", &step_result::current)
      .def_readonly("updated", &step_result::updated)
      .def("as_dict", &step_dict)
      .def("__repr__", [](const step_result& r) { return "step_result(" + std::string(py::str(step_dict(r))) + ")"; });

  py::class_<current_scaling>(m, "current_scaling", R"doc(Current scaling: each step's scale from that step's own amax.

    cs = minifloat.current_scaling(minifloat.amax_scaling.hif8_role("activation"))
    r = cs.step(x)                # r.scale, r.skip (Inf/NaN seen)
    q = cs.quantize(x, r)         # a QuantizedTensor (per-tensor scale r.scale))doc")
      .def(py::init<amax_scaling>(), py::arg("rule") = amax_scaling::hif8_guard(11))
      .def("step", &step_py<current_scaling>, py::arg("x") = py::none(), py::kw_only(), py::arg("amax") = py::none(),
           py::arg("nonfinite") = 0, "Scans x (or takes amax= / nonfinite=) and returns this step's step_result.")
      .def("skip_step", &current_scaling::skip_step)
      .def_property_readonly("rule", &current_scaling::rule)
      .def_property_readonly("scheme", [](const current_scaling& c) { return to_scheme_string(c.scheme()); })
      .def_property_readonly("counters", [](const current_scaling& c) {
        py::dict d;
        d["steps"] = c.counters().steps;
        d["skips"] = c.counters().skips;
        d["overflow_total"] = c.counters().overflow_total;
        return d;
      })
      .def("quantize", [](const current_scaling& c, const py::handle& x, const py::handle& r) {
        return quantize_with(x, c.scheme(), step_from(r));
      }, py::arg("x"), py::arg("result"))
      .def("fake_quantize", [](const current_scaling& c, const py::handle& x, const py::handle& r) {
        return fake_quantize_with(x, c.scheme(), step_from(r));
      }, py::arg("x"), py::arg("result"));

  py::class_<delayed_scaling>(m, "delayed_scaling", R"doc(Delayed scaling: the scale comes from an amax history.

    ds = minifloat.delayed_scaling(history_len=128, interval=10, reduction="max",
                                   scaling=minifloat.amax_scaling.hif8_role("weight"))
    r = ds.step(x); q = ds.quantize(x, r)
    ... ds.skip_step() when the trainer skips the step for a reason found elsewhere.)doc")
      .def(py::init([](std::size_t history_len, std::size_t interval, const std::string& reduction, const amax_scaling& scaling) {
             delayed_scaling_config c;
             c.history_len = history_len;
             c.interval = interval;
             const auto r = parse_amax_reduction(reduction);
             if (!r) throw py::value_error("delayed_scaling: reduction must be 'max' or 'most_recent', got '" + reduction + "'");
             c.reduction = *r;
             c.scaling = scaling;
             return delayed_scaling(c);
           }),
           py::arg("history_len") = 128, py::arg("interval") = 10, py::arg("reduction") = "max",
           py::arg("scaling") = amax_scaling::hif8_guard(11))
      .def_static("hif8", [](const std::string& role) { return delayed_scaling(delayed_scaling_config::hif8(role_arg(role))); },
                  py::arg("role"))
      .def_static("fp8", [](const std::string& role, int margin) {
        return delayed_scaling(delayed_scaling_config::fp8(role_arg(role), margin));
      }, py::arg("role"), py::arg("margin") = 0)
      .def("step", &step_py<delayed_scaling>, py::arg("x") = py::none(), py::kw_only(), py::arg("amax") = py::none(),
           py::arg("nonfinite") = 0)
      .def("skip_step", &delayed_scaling::skip_step)
      .def("reset", &delayed_scaling::reset)
      .def("reduced_amax", &delayed_scaling::reduced_amax)
      .def_property_readonly("history", &delayed_scaling::history)
      .def_property_readonly("scale", &delayed_scaling::scale)
      .def_property_readonly("next_is_current", &delayed_scaling::next_is_current)
      .def_property_readonly("steps_in_interval", &delayed_scaling::steps_in_interval)
      .def_property_readonly("scheme", [](const delayed_scaling& d) { return to_scheme_string(d.scheme()); })
      .def("describe", [](const delayed_scaling& d) { return d.config().describe(); })
      .def_property_readonly("counters", [](const delayed_scaling& d) {
        const auto& c = d.counters();
        py::dict r;
        r["steps"] = c.steps;
        r["skips"] = c.skips;
        r["updates"] = c.updates;
        r["restarts"] = c.restarts;
        r["overflow_total"] = c.overflow_total;
        r["overflow_since_update"] = c.overflow_since_update;
        r["overflow_last_update"] = c.overflow_last_update;
        return r;
      })
      .def("quantize", [](const delayed_scaling& d, const py::handle& x, const py::handle& r) {
        return quantize_with(x, d.scheme(), step_from(r));
      }, py::arg("x"), py::arg("result"))
      .def("fake_quantize", [](const delayed_scaling& d, const py::handle& x, const py::handle& r) {
        return fake_quantize_with(x, d.scheme(), step_from(r));
      }, py::arg("x"), py::arg("result"));
}

}  // namespace minifloat::python
