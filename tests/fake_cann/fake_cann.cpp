// TEST-ONLY fake of the ACL runtime and the aclnn operators the minifloat Ascend shim calls.
// See fake_cann.hpp for what it records, checks and computes. Every constraint below is taken from
// the operator docs summarised in docs/formats/ascend.md#sources; a constraint
// the fake does not emulate (an optional argument the shim never passes, a mode without a CPU
// model) is rejected with a message that says so, never silently accepted.
#include <acl/acl.h>
#include <aclnnop/aclnn_ascend_quant_v3.h>
#include <aclnnop/aclnn_cast.h>
#include <aclnnop/aclnn_copy.h>
#include <aclnnop/aclnn_dynamic_mx_quant_v3.h>
#include <aclnnop/aclnn_dynamic_quant_v4.h>
#include <aclnnop/aclnn_grouped_matmul_v4.h>
#include <aclnnop/aclnn_mul.h>
#include <aclnnop/aclnn_quant_matmul_v5.h>
#include <aclnnop/aclnn_quant_max.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <minifloat/backend/cpu.hpp>
#include <minifloat/quant/mx_tensor.hpp>

#include "fake_cann.hpp"
#include "support/schemes.hpp"

namespace be = minifloat::backend;

// --- the opaque types ------------------------------------------------------------------------------

struct aclTensor {
  int id = 0;
  aclDataType dtype = ACL_DT_UNDEFINED;
  std::vector<std::int64_t> dims, strides, storage;
  std::int64_t offset = 0;
  aclFormat format = ACL_FORMAT_UNDEFINED;
  void* data = nullptr;
  bool destroyed = false;
  bool owned_by_list = false;
};

struct aclTensorList {
  int id = 0;
  std::vector<aclTensor*> items;
  bool destroyed = false;
};

struct aclOpExecutor {
  int id = 0;
  std::string op;
  std::uint64_t workspace = 0;
  bool consumed = false;
  std::function<std::string()> compute;  ///< returns "" or an error message
  std::vector<std::pair<const void*, std::size_t>> buffers;  ///< device memory the op touches
};

namespace {

struct fake_stream {
  int id = 0;
  std::vector<aclOpExecutor*> queue;
  bool destroyed = false;
};

struct block {
  std::size_t size = 0;
  bool freed = false;
  void* memory = nullptr;
};

struct world {
  std::vector<fake_cann::call> journal;
  std::vector<std::string> violations;
  std::string soc = "Ascend950PR_fake";
  std::map<std::string, std::pair<int, std::string>> injected;
  std::vector<std::unique_ptr<aclTensor>> tensors;
  std::vector<std::unique_ptr<aclTensorList>> lists;
  std::vector<std::unique_ptr<aclOpExecutor>> executors;
  std::vector<std::unique_ptr<fake_stream>> streams;
  std::map<std::uintptr_t, block> blocks;  // base -> block (never reused: memory is released at exit)
  long device_refs = 0, init_refs = 0;
  std::string recent_error;

  ~world() {
    for (auto& [base, b] : blocks) std::free(b.memory);
  }
};

world& w() {
  static world instance;
  return instance;
}

void violation(std::string what) { w().violations.push_back(std::move(what)); }

// --- dtypes (the fake's own table, written from docs/formats/ascend.md#data-types, independent of the shim's) ----

using minifloat::format_id;

std::optional<be::element_type> to_backend(aclDataType t) {
  switch (t) {
    case ACL_FLOAT: return be::float32;
    case ACL_FLOAT16: return format_id::float16;
    case ACL_BF16: return format_id::bfloat16;
    case ACL_INT64: return be::int64;
    case ACL_HIFLOAT8: return format_id::hifloat8;
    case ACL_FLOAT8_E5M2: return format_id::float8_e5m2;
    case ACL_FLOAT8_E4M3FN: return format_id::float8_e4m3fn;
    case ACL_FLOAT8_E8M0: return format_id::float8_e8m0fnu;
    case ACL_FLOAT6_E3M2: return format_id::float6_e3m2fn;
    case ACL_FLOAT6_E2M3: return format_id::float6_e2m3fn;
    case ACL_FLOAT4_E2M1: return format_id::float4_e2m1fn;
    default: return std::nullopt;
  }
}

format_id format_of(aclDataType t) { return *to_backend(t)->format(); }

/// Storage bits of an aclDataType (FP4 types: 4 bits in element units).
int bits_of(aclDataType t) {
  switch (t) {
    case ACL_FLOAT: case ACL_INT32: return 32;
    case ACL_FLOAT16: case ACL_BF16: return 16;
    case ACL_INT64: return 64;
    case ACL_FLOAT4_E2M1: case ACL_FLOAT4_E1M2: case ACL_INT4: return 4;
    default: return 8;
  }
}

std::size_t bytes_for(aclDataType t, std::int64_t elements) {
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(elements, 0));
  return bits_of(t) == 4 ? (n + 1) / 2 : n * static_cast<std::size_t>(bits_of(t) / 8);
}

std::string dims_str(const std::vector<std::int64_t>& d) {
  std::string s = "(";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

std::int64_t numel(const std::vector<std::int64_t>& d) {
  std::int64_t n = 1;
  for (auto v : d) n *= v;
  return n;
}

std::int64_t view_extent(const aclTensor& t) {
  if (numel(t.dims) == 0) return 0;
  std::int64_t e = 1;
  for (std::size_t i = 0; i < t.dims.size(); ++i) e += (t.dims[i] - 1) * t.strides[i];
  return e;
}

std::vector<std::int64_t> contiguous_strides(aclDataType t, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size());
  std::int64_t acc = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    std::int64_t d = dims[i];
    if (i + 1 == dims.size() && bits_of(t) == 4) d += d % 2;
    acc *= d;
  }
  return s;
}

bool contiguous(const aclTensor& t) {
  const auto c = contiguous_strides(t.dtype, t.dims);
  for (std::size_t i = 0; i < t.dims.size(); ++i)
    if (t.dims[i] != 1 && t.strides[i] != c[i]) return false;
  return true;
}

// --- device memory -----------------------------------------------------------------------------------

const block* find_block(const void* p, std::size_t bytes, bool live_only = true) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = w().blocks.upper_bound(a);
  if (it == w().blocks.begin()) return nullptr;
  --it;
  if (a < it->first || a + bytes > it->first + it->second.size) return nullptr;
  if (live_only && it->second.freed) return nullptr;
  return &it->second;
}

bool queued_use(const void* p, std::size_t bytes, std::string* who) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (const auto& s : w().streams)
    for (const aclOpExecutor* e : s->queue)
      for (const auto& [q, n] : e->buffers) {
        const auto b = reinterpret_cast<std::uintptr_t>(q);
        if (a < b + n && b < a + std::max<std::size_t>(bytes, 1)) {
          if (who != nullptr) *who = e->op;
          return true;
        }
      }
  return false;
}

// --- journal helpers -----------------------------------------------------------------------------

fake_cann::tensor_record record_of(const aclTensor* t) {
  fake_cann::tensor_record r;
  if (t == nullptr) return r;
  r.present = true;
  r.dtype = static_cast<int>(t->dtype);
  r.dims = t->dims, r.strides = t->strides, r.storage_dims = t->storage;
  r.offset = t->offset;
  r.format = static_cast<int>(t->format);
  r.data = reinterpret_cast<std::uintptr_t>(t->data);
  return r;
}

bool known_tensor(const aclTensor* t) {
  for (const auto& p : w().tensors)
    if (p.get() == t) return !p->destroyed;
  return false;
}
bool known_list(const aclTensorList* l) {
  for (const auto& p : w().lists)
    if (p.get() == l) return !p->destroyed;
  return false;
}

/// The journal entry of the current call; finished by reject() / accept().
struct entry {
  fake_cann::call c;
  explicit entry(std::string api) { c.api = std::move(api); }
  void tensor(const std::string& name, const aclTensor* t) { c.tensors[name] = record_of(t); }
  void list(const std::string& name, const aclTensorList* l) {
    auto& v = c.lists[name];
    if (l != nullptr && known_list(l))
      for (const aclTensor* t : l->items) v.push_back(record_of(t));
  }
};

int finish(entry& e, int status, std::string message = {}) {
  e.c.status = status;
  if (status != 0) w().recent_error = e.c.api + ": " + message;
  w().journal.push_back(std::move(e.c));
  return status;
}

/// A pending injected failure for this API, if any.
std::optional<int> injected(entry& e) {
  auto it = w().injected.find(e.c.api);
  if (it == w().injected.end()) return std::nullopt;
  const auto [status, message] = it->second;
  w().injected.erase(it);
  return finish(e, status, message);
}

constexpr int param_nullptr = 161001;  // ACLNN_ERR_PARAM_NULLPTR
constexpr int param_invalid = 161002;  // ACLNN_ERR_PARAM_INVALID
constexpr int rt_failure = 507011;     // the fake's "task failed on the stream"

// --- tensor snapshots for the deferred compute -------------------------------------------------------

struct snap {
  bool present = false;
  aclDataType dtype = ACL_DT_UNDEFINED;
  std::vector<std::int64_t> dims, strides;
  void* data = nullptr;
  [[nodiscard]] std::int64_t count() const { return numel(dims); }
  [[nodiscard]] std::size_t bytes() const {
    if (count() == 0) return 0;
    std::int64_t e = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) e += (dims[i] - 1) * strides[i];
    return bytes_for(dtype, e);
  }
  /// The contiguous backend view (dims as given, or reshaped).
  [[nodiscard]] be::tensor_view view() const { return be::make_tensor(data, *to_backend(dtype), dims); }
  [[nodiscard]] be::tensor_view view(std::initializer_list<std::int64_t> d) const {
    return be::make_tensor(data, *to_backend(dtype), d);
  }
};

snap take(const aclTensor* t) {
  snap s;
  if (t == nullptr) return s;
  s.present = true;
  s.dtype = t->dtype, s.dims = t->dims, s.strides = t->strides;
  s.data = static_cast<unsigned char*>(t->data) + bytes_for(t->dtype, t->offset);
  return s;
}

aclOpExecutor* make_executor(entry& e, const char* op, std::uint64_t ws, std::function<std::string()> compute,
                             std::initializer_list<const snap*> touched) {
  auto ex = std::make_unique<aclOpExecutor>();
  ex->id = static_cast<int>(w().executors.size());
  ex->op = op;
  ex->workspace = ws;
  ex->compute = std::move(compute);
  for (const snap* s : touched)
    if (s->present) ex->buffers.emplace_back(s->data, std::max<std::size_t>(s->bytes(), 1));
  e.c.executor = ex->id;
  e.c.workspace_size = ws;
  w().executors.push_back(std::move(ex));
  return w().executors.back().get();
}

/// Phase 1's common tail: write the outputs and journal the call.
int accept(entry& e, aclOpExecutor* ex, std::uint64_t* ws, aclOpExecutor** out) {
  *ws = ex->workspace;
  *out = ex;
  return finish(e, 0);
}

/// The shared checks of every phase-1 tensor argument (non-null ones must be live descriptors).
bool live_args(entry& e, std::initializer_list<const aclTensor*> ts, int* status) {
  for (const aclTensor* t : ts)
    if (t != nullptr && !known_tensor(t)) {
      *status = finish(e, param_invalid, "a tensor argument is not a live aclTensor (destroyed, or never created)");
      return false;
    }
  return true;
}

/// Phase 2 of every operator.
int run_phase(const char* api, void* ws, std::uint64_t ws_size, aclOpExecutor* ex, aclrtStream stream) {
  entry e(api);
  e.c.workspace = reinterpret_cast<std::uintptr_t>(ws);
  e.c.workspace_size = ws_size;
  aclOpExecutor* known = nullptr;
  for (const auto& p : w().executors)
    if (p.get() == ex) known = p.get();
  if (w().injected.count(e.c.api) != 0) {
    if (known != nullptr) known->consumed = true;  // a failed launch still uses up the executor
    return *injected(e);
  }
  if (known == nullptr) {
    violation(std::string(api) + ": executor was not made by a GetWorkspaceSize call (phase 1 skipped?)");
    return finish(e, param_invalid, "unknown executor: call the GetWorkspaceSize phase first");
  }
  e.c.executor = known->id;
  if (known->op != api) {
    violation(std::string(api) + ": executor " + std::to_string(known->id) + " was made for " + known->op);
    return finish(e, param_invalid, "executor belongs to " + known->op);
  }
  if (known->consumed) {
    violation(std::string(api) + ": executor " + std::to_string(known->id) + " run a second time");
    return finish(e, param_invalid, "executor already used (an executor runs once)");
  }
  if (ws_size != known->workspace) {
    violation(std::string(api) + ": workspaceSize " + std::to_string(ws_size) + " differs from phase 1's " +
              std::to_string(known->workspace));
    return finish(e, param_invalid, "workspaceSize differs from the GetWorkspaceSize result");
  }
  if (ws_size > 0 && find_block(ws, ws_size) == nullptr) {
    violation(std::string(api) + ": workspace is not a live device buffer of " + std::to_string(ws_size) + " bytes");
    return finish(e, param_invalid, "workspace is not device memory of workspaceSize bytes");
  }
  fake_stream* st = nullptr;
  for (const auto& s : w().streams)
    if (s.get() == stream && !s->destroyed) st = s.get();
  if (st == nullptr) {
    violation(std::string(api) + ": stream is not a live aclrtCreateStream stream");
    return finish(e, param_invalid, "invalid stream");
  }
  e.c.stream = st->id;
  known->consumed = true;
  if (ws_size > 0) known->buffers.emplace_back(ws, static_cast<std::size_t>(ws_size));
  st->queue.push_back(known);
  return finish(e, 0);
}

// --- element access for the formula-based operators ---------------------------------------------------

float read_float(const snap& s, std::int64_t i) {
  const auto idx = static_cast<std::size_t>(i);
  if (s.dtype == ACL_FLOAT) {
    float v;
    std::memcpy(&v, static_cast<const float*>(s.data) + idx, 4);
    return v;
  }
  std::uint16_t b;
  std::memcpy(&b, static_cast<const std::uint16_t*>(s.data) + idx, 2);
  return s.dtype == ACL_BF16 ? static_cast<float>(minifloat::bfloat16::from_bits(b))
                             : static_cast<float>(minifloat::float16::from_bits(b));
}

void write_float(const snap& s, std::int64_t i, float v) {
  const auto idx = static_cast<std::size_t>(i);
  if (s.dtype == ACL_FLOAT) {
    std::memcpy(static_cast<float*>(s.data) + idx, &v, 4);
    return;
  }
  const std::uint16_t b = s.dtype == ACL_BF16 ? minifloat::narrow<minifloat::bfloat16>(v).bits()
                                              : minifloat::narrow<minifloat::float16>(v).bits();
  std::memcpy(static_cast<std::uint16_t*>(s.data) + idx, &b, 2);
}

/// y[i] = encode(x[i] * scale[index(i)]) for an 8-bit y (aclnnAscendQuantV3 / aclnnQuantMax).
std::string multiply_quantize(const snap& x, const snap& scale, const snap& y, int axis, minifloat::rounding r) {
  const minifloat::conversion conv{r, minifloat::overflow::saturate};
  const std::int64_t n = x.count();
  const std::int64_t scale_n = scale.count();
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < x.dims.size(); ++d) inner *= x.dims[d];
  auto* out = static_cast<std::uint8_t*>(y.data);
  minifloat::visit_format(format_of(y.dtype), [&](auto tag) {
    using Elem = typename decltype(tag)::type;
    if constexpr (minifloat::sizeof_bits<Elem> == 8) {
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t si = scale_n == 1 ? 0 : (i / inner) % x.dims[static_cast<std::size_t>(axis)];
        const float v = read_float(x, i) * read_float(scale, si);  // one float32 multiply, as documented
        out[static_cast<std::size_t>(i)] = minifloat::narrow<Elem>(v, conv).bits();
      }
    }
  });
  return {};
}

std::optional<minifloat::rounding> rounding_of(std::string_view s) {
  if (s == "rint") return minifloat::rounding::nearest_even;
  if (s == "round") return minifloat::rounding::nearest_away;
  if (s == "floor") return minifloat::rounding::downward;
  if (s == "ceil") return minifloat::rounding::upward;
  if (s == "trunc") return minifloat::rounding::toward_zero;
  return std::nullopt;  // "hybrid": recorded, not emulated
}

fake_stream* find_stream(aclrtStream s) {
  for (const auto& p : w().streams)
    if (p.get() == s && !p->destroyed) return p.get();
  return nullptr;
}

std::string not_emulated(const std::string& what) { return "fake CANN: " + what + " is recorded but not emulated"; }

/// Runs a CPU-backend call, turning its exceptions into an error message.
template <class F>
std::string cpu_call(F&& f) {
  try {
    be::cpu_backend cpu;
    f(cpu);
    return {};
  } catch (const std::exception& ex) {
    return std::string("fake CANN compute failed: ") + ex.what();
  }
}

bool is_q8(aclDataType t) { return t == ACL_HIFLOAT8 || t == ACL_FLOAT8_E5M2 || t == ACL_FLOAT8_E4M3FN; }
bool is_fp8(aclDataType t) { return t == ACL_FLOAT8_E5M2 || t == ACL_FLOAT8_E4M3FN; }
bool is_float_in(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16; }
std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The library scheme an operator argument means (rule none: its scales are given or are outputs
// the CPU backend is told how to make).
using test_support::scheme_of;
/// MX blocks along `axis`, with the block shape spelled as CANN lays the scales out (32x1 for axis 0).
minifloat::quant_scheme mx_scheme_of(format_id f, int axis, minifloat::scale_rule rule = minifloat::scale_rule::floor) {
  minifloat::quant_scheme s = test_support::mx_scheme(f, axis, rule);
  if (axis == 0) s.block_rows = 32, s.block_cols = 1;
  return s;
}

/// The fake's own reading of the CANN paired layout: the library's mx_scales_from_cann, slab by slab
/// (it rejects a pad byte other than 0). `slabs` slabs of a rows x cols tensor blocked along axis.
std::vector<std::uint8_t> plain_from_paired(const void* paired, std::size_t slabs, std::size_t rows, std::size_t cols, int axis) {
  const auto cs = minifloat::mx_cann_scale_shape(rows, cols, axis);
  const std::size_t slab = cs[0] * cs[1] * cs[2];
  std::vector<std::uint8_t> plain;
  for (std::size_t b = 0; b < slabs; ++b) {
    const auto part = minifloat::mx_scales_from_cann(
        std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(paired) + b * slab, slab), rows, cols, axis);
    plain.insert(plain.end(), part.begin(), part.end());
  }
  return plain;
}

/// An MX GEMM operand from the operator's codes and paired scales, its plain scales kept in `store`.
be::quantized_view mx_operand(const snap& codes, const snap& paired, std::size_t slabs, std::size_t rows, std::size_t cols,
                              int axis, std::vector<std::uint8_t>& store) {
  store = plain_from_paired(paired.data, slabs, rows, cols, axis);
  be::quantized_view q;
  q.scheme = mx_scheme_of(format_of(codes.dtype), axis);
  q.codes = codes.view();
  const auto grid = minifloat::mx_scale_shape(rows, cols, axis);
  const auto gr = static_cast<std::int64_t>(grid[0]), gc = static_cast<std::int64_t>(grid[1]);
  q.scales = slabs == 1 ? be::make_tensor(store.data(), format_id::float8_e8m0fnu, {gr, gc})
                        : be::make_tensor(store.data(), format_id::float8_e8m0fnu, {static_cast<std::int64_t>(slabs), gr, gc});
  return q;
}

}  // namespace

// --- fake_cann.hpp ---------------------------------------------------------------------------------

namespace fake_cann {

const std::vector<call>& calls() { return w().journal; }
std::vector<call> calls_named(std::string_view api) {
  std::vector<call> r;
  for (const auto& c : w().journal)
    if (c.api == api) r.push_back(c);
  return r;
}
long first_index(std::string_view api) {
  for (std::size_t i = 0; i < w().journal.size(); ++i)
    if (w().journal[i].api == api) return static_cast<long>(i);
  return -1;
}
long last_index(std::string_view api) {
  for (std::size_t i = w().journal.size(); i-- > 0;)
    if (w().journal[i].api == api) return static_cast<long>(i);
  return -1;
}
const std::vector<std::string>& violations() { return w().violations; }
std::vector<std::string> take_violations() { return std::exchange(w().violations, {}); }
void reset() {
  w().journal.clear();
  w().violations.clear();
  w().injected.clear();
  w().recent_error.clear();
}
void set_soc_name(std::string name) { w().soc = std::move(name); }
void fail_next(std::string api, int status, std::string message) { w().injected[std::move(api)] = {status, std::move(message)}; }

counters state() {
  counters c;
  for (const auto& t : w().tensors) c.live_tensors += t->destroyed ? 0 : 1;
  for (const auto& l : w().lists) c.live_lists += l->destroyed ? 0 : 1;
  for (const auto& e : w().executors) c.pending_executors += e->consumed ? 0 : 1;
  for (const auto& s : w().streams) {
    c.queued_ops += static_cast<long>(s->queue.size());
    c.live_streams += s->destroyed ? 0 : 1;
  }
  for (const auto& [base, b] : w().blocks) c.live_buffers += b.freed ? 0 : 1;
  c.device_refs = w().device_refs;
  c.init_refs = w().init_refs;
  return c;
}

}  // namespace fake_cann

// --- the ACL runtime ------------------------------------------------------------------------------

extern "C" {

const char* aclGetRecentErrMsg(void) { return w().recent_error.c_str(); }

aclError aclInit(const char*) {
  entry e("aclInit");
  if (auto s = injected(e)) return *s;
  ++w().init_refs;
  return finish(e, 0);
}
aclError aclFinalize(void) {
  entry e("aclFinalize");
  if (w().init_refs <= 0) violation("aclFinalize without aclInit");
  --w().init_refs;
  return finish(e, 0);
}

aclError aclrtSetDevice(int32_t deviceId) {
  entry e("aclrtSetDevice");
  e.c.ints["deviceId"] = deviceId;
  if (auto s = injected(e)) return *s;
  if (w().init_refs <= 0) violation("aclrtSetDevice before aclInit");
  ++w().device_refs;
  return finish(e, 0);
}
aclError aclrtResetDevice(int32_t deviceId) {
  entry e("aclrtResetDevice");
  e.c.ints["deviceId"] = deviceId;
  if (w().device_refs <= 0) violation("aclrtResetDevice without aclrtSetDevice");
  --w().device_refs;
  return finish(e, 0);
}

const char* aclrtGetSocName(void) { return w().soc.c_str(); }

aclError aclrtCreateStream(aclrtStream* stream) {
  entry e("aclrtCreateStream");
  if (auto s = injected(e)) return *s;
  if (stream == nullptr) return finish(e, param_nullptr, "stream is null");
  auto st = std::make_unique<fake_stream>();
  st->id = static_cast<int>(w().streams.size());
  e.c.stream = st->id;
  *stream = st.get();
  w().streams.push_back(std::move(st));
  return finish(e, 0);
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  entry e("aclrtSynchronizeStream");
  fake_stream* st = find_stream(stream);
  if (st == nullptr) return finish(e, param_invalid, "invalid stream");
  e.c.stream = st->id;
  e.c.ints["queued"] = static_cast<long long>(st->queue.size());
  std::string first_error;
  for (aclOpExecutor* ex : std::exchange(st->queue, {})) {
    bool ok = true;
    for (const auto& [p, n] : ex->buffers)
      if (find_block(p, n) == nullptr) {
        violation(ex->op + ": runs on device memory that was freed (or never allocated) before the stream reached it");
        ok = false;
      }
    if (!ok) continue;
    if (std::string err = ex->compute(); !err.empty() && first_error.empty()) first_error = ex->op + ": " + err;
  }
  if (auto s = injected(e)) return *s;
  if (!first_error.empty()) return finish(e, rt_failure, first_error);
  return finish(e, 0);
}

aclError aclrtDestroyStream(aclrtStream stream) {
  entry e("aclrtDestroyStream");
  fake_stream* st = find_stream(stream);
  if (st == nullptr) return finish(e, param_invalid, "invalid stream");
  e.c.stream = st->id;
  if (!st->queue.empty()) violation("aclrtDestroyStream with " + std::to_string(st->queue.size()) + " operators still queued");
  st->destroyed = true;
  return finish(e, 0);
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  entry e("aclrtMalloc");
  e.c.ints["size"] = static_cast<long long>(size);
  e.c.ints["policy"] = policy;
  if (auto s = injected(e)) return *s;
  if (devPtr == nullptr || size == 0) return finish(e, param_invalid, "devPtr null or size 0");
  const std::size_t rounded = (size + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  std::memset(p, 0xCD, rounded);  // garbage, so an unwritten output shows
  w().blocks[reinterpret_cast<std::uintptr_t>(p)] = block{size, false, p};
  *devPtr = p;
  return finish(e, 0);
}

aclError aclrtFree(void* devPtr) {
  entry e("aclrtFree");
  e.c.ints["address"] = static_cast<long long>(reinterpret_cast<std::uintptr_t>(devPtr));
  auto it = w().blocks.find(reinterpret_cast<std::uintptr_t>(devPtr));
  if (it == w().blocks.end() || it->second.freed) {
    violation("aclrtFree of an address aclrtMalloc did not return (or freed twice)");
    return finish(e, param_invalid, "not a device allocation");
  }
  if (std::string who; queued_use(devPtr, it->second.size, &who))
    violation("aclrtFree of a buffer that queued " + who + " still uses (free only after aclrtSynchronizeStream)");
  it->second.freed = true;  // the memory itself is kept, so a late use is caught, not reused
  return finish(e, 0);
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  entry e("aclrtMemcpy");
  e.c.ints["kind"] = kind;
  e.c.ints["count"] = static_cast<long long>(count);
  if (auto s = injected(e)) return *s;
  if (count > destMax) return finish(e, param_invalid, "count exceeds destMax");
  const bool dst_dev = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  const bool src_dev = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (dst_dev ? find_block(dst, count) == nullptr : find_block(dst, 1, false) != nullptr)
    violation(std::string("aclrtMemcpy: the destination is not ") + (dst_dev ? "a live device buffer" : "host memory"));
  if (src_dev ? find_block(src, count) == nullptr : find_block(src, 1, false) != nullptr)
    violation(std::string("aclrtMemcpy: the source is not ") + (src_dev ? "a live device buffer" : "host memory"));
  std::string who;
  if ((dst_dev && queued_use(dst, count, &who)) || (src_dev && queued_use(src, count, &who)))
    violation("aclrtMemcpy touches device memory that queued " + who + " still uses (synchronize the stream first)");
  if (count != 0) std::memmove(dst, src, count);
  return finish(e, 0);
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  entry e("aclrtMemsetAsync");
  e.c.ints["address"] = static_cast<long long>(reinterpret_cast<std::uintptr_t>(devPtr));
  e.c.ints["maxCount"] = static_cast<long long>(maxCount);
  e.c.ints["value"] = value;
  e.c.ints["count"] = static_cast<long long>(count);
  if (auto s = injected(e)) return *s;
  if (count > maxCount) return finish(e, param_invalid, "count exceeds maxCount");
  fake_stream* st = find_stream(stream);
  if (st == nullptr) {
    violation("aclrtMemsetAsync: stream is not a live aclrtCreateStream stream");
    return finish(e, param_invalid, "invalid stream");
  }
  e.c.stream = st->id;
  if (count != 0 && find_block(devPtr, count) == nullptr) {
    violation("aclrtMemsetAsync: the destination is not a live device buffer of " + std::to_string(count) + " bytes");
    return finish(e, param_invalid, "devPtr is not device memory of count bytes");
  }
  // Queued like an operator (runs at aclrtSynchronizeStream, in stream order); no phase 1.
  auto ex = std::make_unique<aclOpExecutor>();
  ex->id = static_cast<int>(w().executors.size());
  ex->op = "aclrtMemsetAsync";
  ex->consumed = true;
  ex->compute = [devPtr, value, count] {
    std::memset(devPtr, value, count);
    return std::string();
  };
  ex->buffers.emplace_back(devPtr, std::max<std::size_t>(count, 1));
  st->queue.push_back(ex.get());
  w().executors.push_back(std::move(ex));
  return finish(e, 0);
}

// --- tensors -----------------------------------------------------------------------------------------

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
  auto t = std::make_unique<aclTensor>();
  t->id = static_cast<int>(w().tensors.size());
  t->dtype = dataType;
  t->dims.assign(viewDims, viewDims + viewDimsNum);
  t->strides.assign(stride, stride + viewDimsNum);
  t->storage.assign(storageDims, storageDims + storageDimsNum);
  t->offset = offset;
  t->format = format;
  t->data = tensorData;
  const std::string what = "aclCreateTensor dtype " + std::to_string(dataType) + " " + dims_str(t->dims);
  if (viewDimsNum > 8) violation(what + ": more than 8 dimensions");
  for (auto s : t->strides)
    if (s < 0) violation(what + ": negative stride");
  if (offset < 0) violation(what + ": negative offset");
  if (reinterpret_cast<std::uintptr_t>(tensorData) % 32 != 0) violation(what + ": tensorData not 32-byte aligned");
  const std::int64_t extent = view_extent(*t) + offset;
  if (extent > numel(t->storage)) violation(what + ": the view reaches past the storage dims " + dims_str(t->storage));
  if (extent > 0 && find_block(tensorData, bytes_for(dataType, extent)) == nullptr)
    violation(what + ": tensorData is not inside a live device buffer of " + std::to_string(bytes_for(dataType, extent)) +
              " bytes (a host pointer?)");
  w().tensors.push_back(std::move(t));
  return w().tensors.back().get();
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  for (auto& p : w().tensors)
    if (p.get() == tensor) {
      if (p->destroyed) violation("aclDestroyTensor: destroyed twice");
      if (p->owned_by_list) violation("aclDestroyTensor: the tensor belongs to a list (aclDestroyTensorList destroys it)");
      p->destroyed = true;
      return 0;
    }
  violation("aclDestroyTensor: not an aclCreateTensor result");
  return param_invalid;
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  auto l = std::make_unique<aclTensorList>();
  l->id = static_cast<int>(w().lists.size());
  for (uint64_t i = 0; i < size; ++i) {
    auto* t = const_cast<aclTensor*>(value[i]);
    if (!known_tensor(t)) violation("aclCreateTensorList: item " + std::to_string(i) + " is not a live tensor");
    else if (t->owned_by_list) violation("aclCreateTensorList: item " + std::to_string(i) + " already belongs to a list");
    else t->owned_by_list = true;
    l->items.push_back(t);
  }
  w().lists.push_back(std::move(l));
  return w().lists.back().get();
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  for (auto& p : w().lists)
    if (p.get() == array) {
      if (p->destroyed) violation("aclDestroyTensorList: destroyed twice");
      p->destroyed = true;
      for (aclTensor* t : p->items) t->destroyed = true;
      return 0;
    }
  violation("aclDestroyTensorList: not an aclCreateTensorList result");
  return param_invalid;
}

// --- aclnnAscendQuantV3 -----------------------------------------------------------------------------

aclnnStatus aclnnAscendQuantV3GetWorkspaceSize(const aclTensor* x, const aclTensor* scale, const aclTensor* offset,
                                               bool sqrtMode, const char* roundMode, int32_t dstType, int32_t axis,
                                               const aclTensor* y, uint64_t* workspaceSize, aclOpExecutor** executor) {
  entry e("aclnnAscendQuantV3GetWorkspaceSize");
  e.tensor("x", x), e.tensor("scale", scale), e.tensor("offset", offset), e.tensor("y", y);
  e.c.ints["sqrtMode"] = sqrtMode, e.c.ints["dstType"] = dstType, e.c.ints["axis"] = axis;
  e.c.strings["roundMode"] = roundMode != nullptr ? roundMode : "<null>";
  if (auto s = injected(e)) return *s;
  if (x == nullptr || scale == nullptr || y == nullptr || roundMode == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "x, scale, y, roundMode, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {x, scale, offset, y}, &st)) return st;
  if (!is_float_in(x->dtype)) return finish(e, param_invalid, "x must be FLOAT, FLOAT16 or BFLOAT16");
  if (x->dims.empty() || x->dims.size() > 8 || !contiguous(*x)) return finish(e, param_invalid, "x must be a contiguous ND tensor of rank 1-8");
  if (scale->dtype != x->dtype) return finish(e, param_invalid, "scale must have x's data type");
  if (offset != nullptr) return finish(e, param_invalid, not_emulated("offset"));
  if (sqrtMode) return finish(e, param_invalid, not_emulated("sqrtMode = true"));
  if (dstType != ACL_HIFLOAT8 && dstType != ACL_FLOAT8_E5M2 && dstType != ACL_FLOAT8_E4M3FN)
    return finish(e, param_invalid, "dstType " + std::to_string(dstType) + " is not 34, 35 or 36 (the integer outputs are not emulated)");
  if (y->dtype != dstType) return finish(e, param_invalid, "y has data type " + std::to_string(y->dtype) + " but dstType is " + std::to_string(dstType));
  if (y->dims != x->dims || !contiguous(*y)) return finish(e, param_invalid, "y must have x's shape");
  const int rank = static_cast<int>(x->dims.size());
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a < rank - 2 || a > rank - 1) return finish(e, param_invalid, "axis must name one of the last two dimensions");
  if (scale->dims.size() != 1 || (scale->dims[0] != 1 && scale->dims[0] != x->dims[static_cast<std::size_t>(a)]))
    return finish(e, param_invalid, "scale must be 1-D of size 1 or x.shape[axis] = " + std::to_string(x->dims[static_cast<std::size_t>(a)]) + ", got " + dims_str(scale->dims));
  const std::string mode = roundMode;
  const bool valid_mode = dstType == ACL_HIFLOAT8 ? (mode == "round" || mode == "hybrid") : mode == "round";
  if (!valid_mode) return finish(e, param_invalid, "roundMode \"" + mode + "\" is not valid for dstType " + std::to_string(dstType) + " on the 950");
  const snap xs = take(x), ss = take(scale), ys = take(y);
  auto* ex = make_executor(e, "aclnnAscendQuantV3", 512,
                           [=] {
                             const auto r = rounding_of(mode);
                             if (!r) return not_emulated("roundMode \"" + mode + "\"");
                             return multiply_quantize(xs, ss, ys, a, *r);
                           },
                           {&xs, &ss, &ys});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnAscendQuantV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnAscendQuantV3", workspace, workspaceSize, executor, stream);
}

// --- aclnnDynamicQuantV4 ----------------------------------------------------------------------------

aclnnStatus aclnnDynamicQuantV4GetWorkspaceSize(const aclTensor* x, const aclTensor* smoothScalesOptional,
                                                const aclTensor* groupIndexOptional, int64_t dstType, bool isSymmetrical,
                                                const char* quantMode, float dstTypeMax, const aclTensor* yOut,
                                                const aclTensor* scaleOut, const aclTensor* offsetOut,
                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  entry e("aclnnDynamicQuantV4GetWorkspaceSize");
  e.tensor("x", x), e.tensor("smoothScalesOptional", smoothScalesOptional), e.tensor("groupIndexOptional", groupIndexOptional);
  e.tensor("yOut", yOut), e.tensor("scaleOut", scaleOut), e.tensor("offsetOut", offsetOut);
  e.c.ints["dstType"] = dstType, e.c.ints["isSymmetrical"] = isSymmetrical;
  e.c.strings["quantMode"] = quantMode != nullptr ? quantMode : "<null>";
  e.c.reals["dstTypeMax"] = dstTypeMax;
  if (auto s = injected(e)) return *s;
  if (x == nullptr || yOut == nullptr || scaleOut == nullptr || quantMode == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "x, yOut, scaleOut, quantMode, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut}, &st)) return st;
  if (x->dtype != ACL_FLOAT16 && x->dtype != ACL_BF16) return finish(e, param_invalid, "x must be FLOAT16 or BFLOAT16");
  if (x->dims.size() < 2 || x->dims.size() > 8 || !contiguous(*x)) return finish(e, param_invalid, "x must be a contiguous tensor of rank 2-8");
  if (smoothScalesOptional != nullptr || groupIndexOptional != nullptr) return finish(e, param_invalid, not_emulated("smoothScales / groupIndex"));
  if (!isSymmetrical || offsetOut != nullptr) return finish(e, param_invalid, not_emulated("asymmetric quantization"));
  if (!is_q8(static_cast<aclDataType>(dstType))) return finish(e, param_invalid, "dstType " + std::to_string(dstType) + " is not 34, 35 or 36 (integer outputs not emulated)");
  if (yOut->dtype != dstType) return finish(e, param_invalid, "yOut has data type " + std::to_string(yOut->dtype) + " but dstType is " + std::to_string(dstType));
  if (yOut->dims != x->dims) return finish(e, param_invalid, "yOut must have x's shape");
  if (!(dstTypeMax >= 0.0f && dstTypeMax <= 32768.0f)) return finish(e, param_invalid, "dstTypeMax must lie in [0, 32768]");
  const std::string mode = quantMode;
  if (mode != "pertoken" && mode != "pertensor")
    return finish(e, param_invalid, mode == "perchannel" ? not_emulated("quantMode perchannel") : "quantMode \"" + mode + "\" is not pertoken, pertensor or perchannel");
  if (scaleOut->dtype != ACL_FLOAT) return finish(e, param_invalid, "scaleOut must be FLOAT");
  const std::vector<std::int64_t> want = mode == "pertensor" ? std::vector<std::int64_t>{1}
                                                             : std::vector<std::int64_t>(x->dims.begin(), x->dims.end() - 1);
  if (scaleOut->dims != want) return finish(e, param_invalid, "scaleOut must have shape " + dims_str(want) + ", got " + dims_str(scaleOut->dims));
  const snap xs = take(x), ys = take(yOut), ss = take(scaleOut);
  const float dst_max = dstType == ACL_HIFLOAT8 ? dstTypeMax : 0.0f;  // "only takes effect for HIFLOAT8"
  auto* ex = make_executor(e, "aclnnDynamicQuantV4", 1024,
                           [=] {
                             const std::int64_t cols = xs.dims.back(), rows = xs.count() / std::max<std::int64_t>(cols, 1);
                             return cpu_call([&](be::cpu_backend& cpu) {
                               const bool per_tensor = mode == "pertensor";
                               be::quantized_view y;
                               y.scheme = scheme_of(format_of(ys.dtype), per_tensor ? minifloat::granularity::tensor
                                                                                    : minifloat::granularity::token,
                                                    1, 128, minifloat::rounding::nearest, minifloat::scale_rule::max);
                               y.codes = ys.view({rows, cols});
                               y.scales = ss.view({per_tensor ? 1 : rows});
                               cpu.quantize(xs.view({rows, cols}), y, {.dst_max = dst_max});
                             });
                           },
                           {&xs, &ys, &ss});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnDynamicQuantV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnDynamicQuantV4", workspace, workspaceSize, executor, stream);
}

// --- aclnnQuantMax ----------------------------------------------------------------------------------

aclnnStatus aclnnQuantMaxGetWorkspaceSize(const aclTensor* x, const aclTensor* scale, char* roundMode, int64_t dstType,
                                          const aclTensor* y, const aclTensor* amax, uint64_t* workspaceSize,
                                          aclOpExecutor** executor) {
  entry e("aclnnQuantMaxGetWorkspaceSize");
  e.tensor("x", x), e.tensor("scale", scale), e.tensor("y", y), e.tensor("amax", amax);
  e.c.ints["dstType"] = dstType;
  e.c.strings["roundMode"] = roundMode != nullptr ? roundMode : "<null>";
  if (auto s = injected(e)) return *s;
  if (x == nullptr || scale == nullptr || y == nullptr || amax == nullptr || roundMode == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "x, scale, y, amax, roundMode, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {x, scale, y, amax}, &st)) return st;
  if (!is_float_in(x->dtype)) return finish(e, param_invalid, "x must be FLOAT, FLOAT16 or BFLOAT16");
  if (x->dims.empty() || x->dims.size() > 8 || !contiguous(*x)) return finish(e, param_invalid, "x must have rank 1-8");
  if (scale->dtype != ACL_FLOAT || scale->dims != std::vector<std::int64_t>{1}) return finish(e, param_invalid, "scale must be FLOAT of shape [1]");
  if (!is_q8(static_cast<aclDataType>(dstType))) return finish(e, param_invalid, "dstType must be 34, 35 or 36");
  if (y->dtype != dstType) return finish(e, param_invalid, "y has data type " + std::to_string(y->dtype) + " but dstType is " + std::to_string(dstType));
  if (y->dims != x->dims) return finish(e, param_invalid, "y must have x's shape");
  if (amax->dtype != x->dtype || amax->dims != std::vector<std::int64_t>{1}) return finish(e, param_invalid, "amax must have x's data type and shape [1]");
  const std::string mode = roundMode;
  const bool valid_mode = dstType == ACL_HIFLOAT8 ? (mode == "round" || mode == "hybrid") : mode == "rint";
  if (!valid_mode) return finish(e, param_invalid, "roundMode \"" + mode + "\" is not valid for dstType " + std::to_string(dstType));
  const snap xs = take(x), ss = take(scale), ys = take(y), as = take(amax);
  auto* ex = make_executor(e, "aclnnQuantMax", 256,
                           [=] {
                             const auto r = rounding_of(mode);
                             if (!r) return not_emulated("roundMode \"" + mode + "\"");
                             if (auto err = multiply_quantize(xs, ss, ys, static_cast<int>(xs.dims.size()) - 1, *r); !err.empty()) return err;
                             float m = 0.0f;  // max |x| over the finite x, as the CPU backend reports it
                             for (std::int64_t i = 0; i < xs.count(); ++i) {
                               const float v = std::fabs(read_float(xs, i));
                               if (std::isfinite(v)) m = std::max(m, v);
                             }
                             write_float(as, 0, m);
                             return std::string();
                           },
                           {&xs, &ss, &ys, &as});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnQuantMax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnQuantMax", workspace, workspaceSize, executor, stream);
}

// --- aclnnDynamicMxQuantV3 --------------------------------------------------------------------------

aclnnStatus aclnnDynamicMxQuantV3GetWorkspaceSize(const aclTensor* x, int64_t axis, char* roundModeOptional,
                                                  int64_t dstType, int64_t blocksize, int64_t scaleAlg, double dstTypeMax,
                                                  double maxLowBound, const aclTensor* yOut, const aclTensor* mxscaleOut,
                                                  uint64_t* workspaceSize, aclOpExecutor** executor) {
  entry e("aclnnDynamicMxQuantV3GetWorkspaceSize");
  e.tensor("x", x), e.tensor("yOut", yOut), e.tensor("mxscaleOut", mxscaleOut);
  e.c.ints["axis"] = axis, e.c.ints["dstType"] = dstType, e.c.ints["blocksize"] = blocksize, e.c.ints["scaleAlg"] = scaleAlg;
  e.c.reals["dstTypeMax"] = dstTypeMax, e.c.reals["maxLowBound"] = maxLowBound;
  e.c.strings["roundMode"] = roundModeOptional != nullptr ? roundModeOptional : "<null>";
  if (auto s = injected(e)) return *s;
  if (x == nullptr || yOut == nullptr || mxscaleOut == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "x, yOut, mxscaleOut, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {x, yOut, mxscaleOut}, &st)) return st;
  if (!is_float_in(x->dtype)) return finish(e, param_invalid, "x must be FLOAT16, BFLOAT16 or FLOAT");
  const int rank = static_cast<int>(x->dims.size());
  if (rank < 1 || rank > 7 || !contiguous(*x)) return finish(e, param_invalid, "x must be a contiguous tensor of rank 1-7");
  if (axis < -rank || axis >= rank) return finish(e, param_invalid, "axis must lie in [-D, D-1]");
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  if (dstType == ACL_FLOAT4_E1M2) return finish(e, param_invalid, not_emulated("dstType 41 (FLOAT4_E1M2)"));
  if (dstType != ACL_FLOAT8_E5M2 && dstType != ACL_FLOAT8_E4M3FN && dstType != ACL_FLOAT4_E2M1)
    return finish(e, param_invalid, "dstType " + std::to_string(dstType) + " is not 35, 36, 40 or 41");
  if (yOut->dtype != dstType) return finish(e, param_invalid, "yOut has data type " + std::to_string(yOut->dtype) + " but dstType is " + std::to_string(dstType));
  if (yOut->dims != x->dims) return finish(e, param_invalid, "yOut must have x's shape");
  if (blocksize != 32) return finish(e, param_invalid, blocksize % 32 == 0 && blocksize > 0 && blocksize <= 1024 ? not_emulated("blocksize " + std::to_string(blocksize)) : "blocksize must be a multiple of 32 up to 1024");
  const bool fp4 = dstType == ACL_FLOAT4_E2M1;
  if (scaleAlg != 0 && !(scaleAlg == 1 && !fp4))
    return finish(e, param_invalid, scaleAlg == 2 && fp4 ? not_emulated("scaleAlg 2") : "scaleAlg " + std::to_string(scaleAlg) + " is not valid for dstType " + std::to_string(dstType));
  if (dstTypeMax != 0.0) return finish(e, param_invalid, not_emulated("dstTypeMax != 0"));
  if (maxLowBound != 0.0) return finish(e, param_invalid, scaleAlg == 1 ? not_emulated("maxLowBound") : "maxLowBound must be 0.0 unless scaleAlg is 1");
  const std::string mode = roundModeOptional != nullptr ? roundModeOptional : "rint";
  const bool valid_mode = fp4 ? (mode == "rint" || mode == "floor" || mode == "round") : mode == "rint";
  if (!valid_mode) return finish(e, param_invalid, "roundMode \"" + mode + "\" is not valid for dstType " + std::to_string(dstType));
  if (x->dtype == ACL_FLOAT && x->dims[a] < 32) return finish(e, param_invalid, "with FLOAT x the quantized axis needs at least 32 elements");
  if (fp4 && x->dims.back() % 2 != 0) return finish(e, param_invalid, "FLOAT4 output needs an even last dimension");
  std::vector<std::int64_t> want = x->dims;
  want[a] = cdiv(cdiv(x->dims[a], 32), 2);
  want.push_back(2);
  if (mxscaleOut->dtype != ACL_FLOAT8_E8M0) return finish(e, param_invalid, "mxscaleOut must be FLOAT8_E8M0");
  if (mxscaleOut->dims != want)
    return finish(e, param_invalid, "mxscaleOut must have shape " + dims_str(want) + " (rank(x) + 1, ceil(ceil(d/32)/2) along axis, last 2), got " + dims_str(mxscaleOut->dims));
  const snap xs = take(x), ys = take(yOut), ss = take(mxscaleOut);
  const int neg_axis = static_cast<int>(a) - rank;
  auto* ex = make_executor(e, "aclnnDynamicMxQuantV3", 2048,
                           [=] {
                             if (mode != "rint") return not_emulated("roundMode \"" + mode + "\" for MX");
                             if (neg_axis != -1 && neg_axis != -2) return not_emulated("an MX axis other than the last two");
                             return cpu_call([&](be::cpu_backend& cpu) {
                               // The CPU backend's plain scales, laid out as the op writes them (pad byte 0).
                               be::quantized_view y;
                               y.scheme = mx_scheme_of(format_of(ys.dtype), neg_axis == -1 ? 1 : 0,
                                                       scaleAlg == 0 ? minifloat::scale_rule::floor : minifloat::scale_rule::rceil);
                               y.codes = ys.view();
                               const auto l = be::detail::slabs_of(y.scheme, y.codes);
                               std::vector<std::uint8_t> plain(l.count * l.scale_count());
                               y.scales = be::make_tensor(plain.data(), format_id::float8_e8m0fnu, be::detail::mx_scale_dims(y.codes, l));
                               cpu.quantize(xs.view(), y);
                               auto* out = static_cast<std::uint8_t*>(ss.data);
                               for (std::size_t b = 0; b < l.count; ++b) {
                                 const auto cann = minifloat::mx_scales_to_cann(
                                     std::span<const std::uint8_t>(plain).subspan(b * l.scale_count(), l.scale_count()), l.rows,
                                     l.cols, y.scheme.axis);
                                 out = std::copy(cann.begin(), cann.end(), out);
                               }
                             });
                           },
                           {&xs, &ys, &ss});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnDynamicMxQuantV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnDynamicMxQuantV3", workspace, workspaceSize, executor, stream);
}

// --- aclnnInplaceCopy -----------------------------------------------------------------------------

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor* selfRef, const aclTensor* src, uint64_t* workspaceSize,
                                             aclOpExecutor** executor) {
  entry e("aclnnInplaceCopyGetWorkspaceSize");
  e.tensor("selfRef", selfRef), e.tensor("src", src);
  if (auto s = injected(e)) return *s;
  if (selfRef == nullptr || src == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "selfRef, src, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {selfRef, src}, &st)) return st;
  // The documented list (INT8 .. BFLOAT16, no low-precision float types), as far as this fake knows the ids.
  const auto listed = [](aclDataType t) {
    return t == ACL_INT8 || t == ACL_UINT8 || t == ACL_INT32 || t == ACL_INT64 || t == ACL_FLOAT16 || t == ACL_FLOAT || t == ACL_BF16;
  };
  if (!listed(selfRef->dtype) || !listed(src->dtype))
    return finish(e, param_invalid, "data types " + std::to_string(selfRef->dtype) + " / " + std::to_string(src->dtype) +
                                        " are not in aclnnInplaceCopy's list (no HIFLOAT8 / FLOAT8 / FLOAT4 types: copy bytes as UINT8)");
  if (selfRef->dtype != src->dtype) return finish(e, param_invalid, not_emulated("a copy that converts data types"));
  if (selfRef->dims.empty() || selfRef->dims.size() > 8) return finish(e, param_invalid, "selfRef must have rank 1-8");
  if (selfRef->dims != src->dims) return finish(e, param_invalid, not_emulated("a broadcasting copy (src " + dims_str(src->dims) + " to selfRef " + dims_str(selfRef->dims) + ")"));
  const snap ds = take(selfRef), ss = take(src);
  const std::size_t elem = static_cast<std::size_t>(bits_of(selfRef->dtype) / 8);
  auto* ex = make_executor(e, "aclnnInplaceCopy", 0,
                           [=] {
                             const std::size_t rank = ds.dims.size();
                             std::vector<std::int64_t> idx(rank, 0);
                             for (std::int64_t i = 0; i < ds.count(); ++i) {
                               std::int64_t so = 0, si = 0;
                               for (std::size_t d = 0; d < rank; ++d) so += idx[d] * ds.strides[d], si += idx[d] * ss.strides[d];
                               std::memmove(static_cast<unsigned char*>(ds.data) + static_cast<std::size_t>(so) * elem,
                                            static_cast<const unsigned char*>(ss.data) + static_cast<std::size_t>(si) * elem, elem);
                               for (std::size_t d = rank; d-- > 0;) {
                                 if (++idx[d] < ds.dims[d]) break;
                                 idx[d] = 0;
                               }
                             }
                             return std::string();
                           },
                           {&ds, &ss});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnInplaceCopy(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnInplaceCopy", workspace, workspaceSize, executor, stream);
}

// --- aclnnCast / aclnnMul -------------------------------------------------------------------------

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor* self, const aclDataType dtype, aclTensor* out, uint64_t* workspaceSize,
                                      aclOpExecutor** executor) {
  entry e("aclnnCastGetWorkspaceSize");
  e.tensor("self", self), e.tensor("out", out);
  e.c.ints["dtype"] = dtype;
  if (auto s = injected(e)) return *s;
  if (self == nullptr || out == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "self, out, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {self, out}, &st)) return st;
  if (out->dtype != dtype) return finish(e, param_invalid, "out has data type " + std::to_string(out->dtype) + " but dtype is " + std::to_string(dtype));
  if (out->dims != self->dims) return finish(e, param_invalid, "out must have self's shape");
  if (dtype != ACL_FLOAT || !(is_q8(self->dtype) || self->dtype == ACL_FLOAT4_E2M1) || !contiguous(*self) || !contiguous(*out))
    return finish(e, param_invalid, not_emulated("a cast other than contiguous HIFLOAT8/FP8/FP4 -> FLOAT"));
  const snap xs = take(self), os = take(out);
  auto* ex = make_executor(e, "aclnnCast", 0,
                           [=] {
                             const std::int64_t cols = xs.dims.back(), rows = xs.count() / std::max<std::int64_t>(cols, 1);
                             return cpu_call([&](be::cpu_backend& cpu) {
                               float one = 1.0f;
                               const be::quantized_view q{scheme_of(format_of(xs.dtype), minifloat::granularity::tensor),
                                                          xs.view({rows, cols}), be::make_tensor(&one, be::float32, {1})};
                               cpu.dequantize(q, os.view({rows, cols}));
                             });
                           },
                           {&xs, &os});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnCast(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnCast", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor* self, const aclTensor* other, aclTensor* out, uint64_t* workspaceSize,
                                     aclOpExecutor** executor) {
  entry e("aclnnMulGetWorkspaceSize");
  e.tensor("self", self), e.tensor("other", other), e.tensor("out", out);
  if (auto s = injected(e)) return *s;
  if (self == nullptr || other == nullptr || out == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "self, other, out, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {self, other, out}, &st)) return st;
  if (self->dtype != ACL_FLOAT || other->dtype != ACL_FLOAT || out->dtype != ACL_FLOAT)
    return finish(e, param_invalid, not_emulated("aclnnMul on a type other than FLOAT"));
  // numpy broadcasting, right-aligned
  const std::size_t rank = std::max(self->dims.size(), other->dims.size());
  std::vector<std::int64_t> shape(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t a = i + self->dims.size() >= rank ? self->dims[i + self->dims.size() - rank] : 1;
    const std::int64_t b = i + other->dims.size() >= rank ? other->dims[i + other->dims.size() - rank] : 1;
    if (a != b && a != 1 && b != 1) return finish(e, param_invalid, "self " + dims_str(self->dims) + " and other " + dims_str(other->dims) + " do not broadcast");
    shape[i] = std::max(a, b);
  }
  if (out->dims != shape) return finish(e, param_invalid, "out must have the broadcast shape " + dims_str(shape));
  if (!contiguous(*self) || !contiguous(*other) || !contiguous(*out)) return finish(e, param_invalid, not_emulated("non-contiguous aclnnMul"));
  const snap as = take(self), bs = take(other), os = take(out);
  auto* ex = make_executor(e, "aclnnMul", 128,
                           [=] {
                             const std::size_t r = shape.size();
                             const auto index_in = [&](const snap& s, std::int64_t flat) {
                               std::int64_t idx = 0, stride = 1;
                               for (std::size_t d = r; d-- > 0;) {
                                 const std::int64_t coord = flat % shape[d];
                                 flat /= shape[d];
                                 if (d + s.dims.size() >= r) {
                                   const std::int64_t dim = s.dims[d + s.dims.size() - r];
                                   idx += (dim == 1 ? 0 : coord) * stride;
                                   stride *= dim;
                                 }
                               }
                               return idx;
                             };
                             for (std::int64_t i = 0; i < numel(shape); ++i)
                               write_float(os, i, read_float(as, index_in(as, i)) * read_float(bs, index_in(bs, i)));
                             return std::string();
                           },
                           {&as, &bs, &os});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnMul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnMul", workspace, workspaceSize, executor, stream);
}

// --- aclnnQuantMatmulV5 -----------------------------------------------------------------------------

aclnnStatus aclnnQuantMatmulV5GetWorkspaceSize(const aclTensor* x1, const aclTensor* x2, const aclTensor* x1Scale,
                                               const aclTensor* x2Scale, const aclTensor* yScale, const aclTensor* x1Offset,
                                               const aclTensor* x2Offset, const aclTensor* yOffset, const aclTensor* bias,
                                               bool transposeX1, bool transposeX2, int64_t groupSize, aclTensor* out,
                                               uint64_t* workspaceSize, aclOpExecutor** executor) {
  entry e("aclnnQuantMatmulV5GetWorkspaceSize");
  e.tensor("x1", x1), e.tensor("x2", x2), e.tensor("x1Scale", x1Scale), e.tensor("x2Scale", x2Scale);
  e.tensor("yScale", yScale), e.tensor("x1Offset", x1Offset), e.tensor("x2Offset", x2Offset), e.tensor("yOffset", yOffset);
  e.tensor("bias", bias), e.tensor("out", out);
  e.c.ints["transposeX1"] = transposeX1, e.c.ints["transposeX2"] = transposeX2, e.c.ints["groupSize"] = groupSize;
  if (auto s = injected(e)) return *s;
  if (x1 == nullptr || x2 == nullptr || x2Scale == nullptr || out == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "x1, x2, x2Scale, out, workspaceSize and executor must not be null");
  int st = 0;
  if (!live_args(e, {x1, x2, x1Scale, x2Scale, yScale, x1Offset, x2Offset, yOffset, bias, out}, &st)) return st;
  if (yScale != nullptr || x1Offset != nullptr || x2Offset != nullptr || yOffset != nullptr)
    return finish(e, param_invalid, not_emulated("yScale / offsets (modes T-CG, static)"));
  if (transposeX1) return finish(e, param_invalid, not_emulated("transposeX1 = true"));
  if (x1->dims.size() != 2 || x2->dims.size() != 2 || !contiguous(*x1) || !contiguous(*x2))
    return finish(e, param_invalid, not_emulated("batched or strided x1 / x2"));
  const std::int64_t m = x1->dims[0], k = x1->dims[1];
  const std::int64_t k2 = transposeX2 ? x2->dims[1] : x2->dims[0], n = transposeX2 ? x2->dims[0] : x2->dims[1];
  if (k2 != k) return finish(e, param_invalid, "x1 " + dims_str(x1->dims) + " and x2 " + dims_str(x2->dims) + (transposeX2 ? " (transposed)" : "") + " disagree on k");
  const aclDataType t1 = x1->dtype, t2 = x2->dtype;
  const bool fp8_pair = is_fp8(t1) && is_fp8(t2), hif8_pair = t1 == ACL_HIFLOAT8 && t2 == ACL_HIFLOAT8;
  const bool fp4_pair = t1 == ACL_FLOAT4_E2M1 && t2 == ACL_FLOAT4_E2M1, mx_fake = t1 == ACL_FLOAT8_E4M3FN && t2 == ACL_FLOAT4_E2M1;
  if (!fp8_pair && !hif8_pair && !fp4_pair && !mx_fake)
    return finish(e, param_invalid, "x1 / x2 data types " + std::to_string(t1) + " / " + std::to_string(t2) + " are not a 950 combination");
  if (out->dtype != ACL_FLOAT && out->dtype != ACL_BF16) return finish(e, param_invalid, not_emulated("out types other than FLOAT / BFLOAT16"));
  if (out->dims != std::vector<std::int64_t>{m, n}) return finish(e, param_invalid, "out must be (m, n) = " + dims_str({m, n}));
  const std::int64_t gk = groupSize & 0xFFFF, gn = (groupSize >> 16) & 0xFFFF, gm = (groupSize >> 32) & 0xFFFF;
  e.c.ints["gsM"] = gm, e.c.ints["gsN"] = gn, e.c.ints["gsK"] = gk;
  if (bias != nullptr && (bias->dtype != ACL_FLOAT || bias->dims != std::vector<std::int64_t>{n}))
    return finish(e, param_invalid, "bias must be FLOAT of shape (n,) here");
  // Mode from dtypes, groupSize and scale shapes, as the doc's tables distinguish them; each mode
  // is then said in the library's words for the CPU backend.
  using minifloat::granularity;
  const format_id f1 = format_of(t1), f2 = format_of(t2);
  minifloat::quant_scheme a_s, b_s;
  std::vector<std::int64_t> want1, want2;
  const std::int64_t kb2 = cdiv(cdiv(k, 32), 2);
  float unit = 1.0f;
  if (x2Scale->dtype == ACL_FLOAT8_E8M0) {
    if (x1Scale == nullptr || x1Scale->dtype != ACL_FLOAT8_E8M0) return finish(e, param_invalid, "mx: x1Scale must be FLOAT8_E8M0");
    if (!(gm == 1 && gn == 1 && gk == 32)) return finish(e, param_invalid, "mx needs groupSize [1, 1, 32] = 4295032864, got " + std::to_string(groupSize));
    if (hif8_pair) return finish(e, param_invalid, "mx takes FP8 or FP4 operands");
    if ((fp4_pair || mx_fake) && !transposeX2) return finish(e, param_invalid, "FLOAT4_E2M1 x2 needs transposeX2 = true");
    if (fp4_pair && (k % 2 != 0 || cdiv(k, 32) % 2 != 0)) return finish(e, param_invalid, "FP4 mx needs k even and ceil(k/32) even");
    if (mx_fake && (k % 64 != 0 || out->dtype != ACL_BF16 || bias != nullptr)) return finish(e, param_invalid, "E4M3 x FP4 mx needs k % 64 == 0, BFLOAT16 out, no FLOAT bias");
    want1 = {m, kb2, 2};
    want2 = transposeX2 ? std::vector<std::int64_t>{n, kb2, 2} : std::vector<std::int64_t>{kb2, n, 2};
    a_s = mx_scheme_of(f1, 1), b_s = mx_scheme_of(f2, transposeX2 ? 1 : 0);
  } else {
    if (x2Scale->dtype != ACL_FLOAT || (x1Scale != nullptr && x1Scale->dtype != ACL_FLOAT))
      return finish(e, param_invalid, not_emulated("scale types other than FLOAT / FLOAT8_E8M0 (e.g. the static INT64 x2Scale)"));
    if (fp4_pair || mx_fake) return finish(e, param_invalid, "FLOAT4_E2M1 operands need FLOAT8_E8M0 scales");
    if (groupSize == 0 || (gm == 0 && gn == 0 && gk == 0)) {
      const bool x1_t = x1Scale == nullptr || x1Scale->dims == std::vector<std::int64_t>{1};
      const bool x2_t = x2Scale->dims == std::vector<std::int64_t>{1};
      if (!x1_t && x1Scale->dims != std::vector<std::int64_t>{m}) return finish(e, param_invalid, "x1Scale must be (1,) or (m,) = " + dims_str({m}) + ", got " + dims_str(x1Scale->dims));
      if (!x2_t && x2Scale->dims != std::vector<std::int64_t>{n}) return finish(e, param_invalid, "x2Scale must be (1,) or (n,) = " + dims_str({n}) + ", got " + dims_str(x2Scale->dims));
      if (x1_t && !x2_t && bias != nullptr) return finish(e, param_invalid, "dynamic T-C quantization takes no bias");
      a_s = scheme_of(f1, x1_t ? granularity::tensor : granularity::token);
      // per output channel of a (k, n) x2: one K x 1 block per column
      b_s = x2_t ? scheme_of(f2, granularity::tensor)
            : transposeX2 ? scheme_of(f2, granularity::channel)
                          : scheme_of(f2, granularity::block, static_cast<std::size_t>(k), 1);
      want1 = x1Scale != nullptr ? x1Scale->dims : std::vector<std::int64_t>{1};
      want2 = x2Scale->dims;
    } else if (gn == 128 && gk == 128 && (gm == 1 || gm == 128)) {
      if (bias != nullptr) return finish(e, param_invalid, "G-B / B-B with FP8 / HIFLOAT8 take no bias");
      if (x1Scale == nullptr) return finish(e, param_invalid, "G-B / B-B need x1Scale");
      want1 = {cdiv(m, gm), cdiv(k, 128)};
      want2 = transposeX2 ? std::vector<std::int64_t>{cdiv(n, 128), cdiv(k, 128)} : std::vector<std::int64_t>{cdiv(k, 128), cdiv(n, 128)};
      a_s = scheme_of(f1, granularity::block, static_cast<std::size_t>(gm), 128);
      b_s = scheme_of(f2, granularity::block, 128, 128);
    } else {
      return finish(e, param_invalid, "groupSize " + std::to_string(groupSize) + " = [gsM, gsN, gsK] [" + std::to_string(gm) + ", " + std::to_string(gn) + ", " + std::to_string(gk) + "] is not a documented combination");
    }
  }
  if (x1Scale != nullptr && x1Scale->dims != want1) return finish(e, param_invalid, "x1Scale must have shape " + dims_str(want1) + ", got " + dims_str(x1Scale->dims));
  if (x2Scale->dims != want2) return finish(e, param_invalid, "x2Scale must have shape " + dims_str(want2) + (transposeX2 ? " (x2 transposed)" : "") + ", got " + dims_str(x2Scale->dims));
  const snap s1 = take(x1), s2 = take(x2), sc1 = take(x1Scale), sc2 = take(x2Scale), sb = take(bias), so = take(out);
  auto* ex = make_executor(e, "aclnnQuantMatmulV5", 4096,
                           [=]() mutable {
                             return cpu_call([&](be::cpu_backend& cpu) {
                               const auto um = static_cast<std::size_t>(m), un = static_cast<std::size_t>(n),
                                          uk = static_cast<std::size_t>(k);
                               std::vector<std::uint8_t> pa, pb;
                               be::quantized_view qa{a_s, s1.view(), {}}, qb{b_s, s2.view(), {}};
                               if (a_s.gran == granularity::mx) {
                                 qa = mx_operand(s1, sc1, 1, um, uk, 1, pa);
                                 qb = transposeX2 ? mx_operand(s2, sc2, 1, un, uk, 1, pb) : mx_operand(s2, sc2, 1, uk, un, 0, pb);
                               } else {
                                 qa.scales = sc1.present ? sc1.view() : be::make_tensor(&unit, be::float32, {1});
                                 qb.scales = sc2.view();
                               }
                               cpu.gemm(qa, qb, sb.present ? sb.view() : be::tensor_view{}, so.view(),
                                        transposeX2 ? minifloat::gemm_layout::nk : minifloat::gemm_layout::kn);
                             });
                           },
                           {&s1, &s2, &sc1, &sc2, &sb, &so});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnQuantMatmulV5(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnQuantMatmulV5", workspace, workspaceSize, executor, stream);
}

// --- aclnnGroupedMatmulV4 ---------------------------------------------------------------------------

aclnnStatus aclnnGroupedMatmulV4GetWorkspaceSize(
    const aclTensorList* x, const aclTensorList* weight, const aclTensorList* biasOptional, const aclTensorList* scaleOptional,
    const aclTensorList* offsetOptional, const aclTensorList* antiquantScaleOptional, const aclTensorList* antiquantOffsetOptional,
    const aclTensorList* perTokenScaleOptional, const aclTensor* groupListOptional, const aclTensorList* activationInputOptional,
    const aclTensorList* activationQuantScaleOptional, const aclTensorList* activationQuantOffsetOptional, int64_t splitItem,
    int64_t groupType, int64_t groupListType, int64_t actType, aclTensorList* out, aclTensorList* activationFeatureOutOptional,
    aclTensorList* dynQuantScaleOutOptional, uint64_t* workspaceSize, aclOpExecutor** executor) {
  entry e("aclnnGroupedMatmulV4GetWorkspaceSize");
  e.list("x", x), e.list("weight", weight), e.list("biasOptional", biasOptional), e.list("scaleOptional", scaleOptional);
  e.list("perTokenScaleOptional", perTokenScaleOptional), e.list("out", out);
  e.tensor("groupListOptional", groupListOptional);
  e.c.ints["splitItem"] = splitItem, e.c.ints["groupType"] = groupType, e.c.ints["groupListType"] = groupListType;
  e.c.ints["actType"] = actType;
  if (auto s = injected(e)) return *s;
  if (x == nullptr || weight == nullptr || out == nullptr || workspaceSize == nullptr || executor == nullptr)
    return finish(e, param_nullptr, "x, weight, out, workspaceSize and executor must not be null");
  for (const aclTensorList* l : {x, weight, biasOptional, scaleOptional, perTokenScaleOptional, static_cast<const aclTensorList*>(out)})
    if (l != nullptr && !known_list(l)) return finish(e, param_invalid, "a list argument is not a live aclTensorList");
  if (offsetOptional != nullptr || antiquantScaleOptional != nullptr || antiquantOffsetOptional != nullptr ||
      activationInputOptional != nullptr || activationQuantScaleOptional != nullptr || activationQuantOffsetOptional != nullptr ||
      activationFeatureOutOptional != nullptr || dynQuantScaleOutOptional != nullptr)
    return finish(e, param_invalid, "offset / antiquant / activation arguments must be null (fake-quant and activation modes not emulated)");
  if (groupType != 0) return finish(e, param_invalid, not_emulated("groupType " + std::to_string(groupType) + " (only M grouping, 0)"));
  if (splitItem != 2 && splitItem != 3) return finish(e, param_invalid, "single-tensor output needs splitItem 2 or 3");
  if (groupListType != 0 && groupListType != 1) return finish(e, param_invalid, not_emulated("groupListType " + std::to_string(groupListType)));
  if (actType != 0) return finish(e, param_invalid, "actType must be 0 for these quantization modes");
  if (x->items.size() != 1 || weight->items.size() != 1 || out->items.size() != 1)
    return finish(e, param_invalid, not_emulated("multi-tensor lists (only single x, weight, out)"));
  if (scaleOptional == nullptr || scaleOptional->items.size() != 1 || perTokenScaleOptional == nullptr || perTokenScaleOptional->items.size() != 1)
    return finish(e, param_invalid, "quantized grouped matmul needs one scale and one perTokenScale tensor");
  if (groupListOptional == nullptr || !known_tensor(groupListOptional)) return finish(e, param_invalid, "groupListOptional is required for M grouping");
  const aclTensor *xa = x->items[0], *wt = weight->items[0], *sc = scaleOptional->items[0], *pt = perTokenScaleOptional->items[0], *yo = out->items[0];
  if (xa->dims.size() != 2 || !contiguous(*xa)) return finish(e, param_invalid, "x must be a contiguous (M, K) tensor");
  if (wt->dims.size() != 3) return finish(e, param_invalid, "weight must be (g, K, N)");
  const std::int64_t mm = xa->dims[0], kk = xa->dims[1], g = wt->dims[0], n = wt->dims[2];
  if (wt->dims[1] != kk) return finish(e, param_invalid, "weight " + dims_str(wt->dims) + " does not have x's K = " + std::to_string(kk));
  bool transposed = false;
  if (!contiguous(*wt)) {
    if (wt->strides == std::vector<std::int64_t>{n * kk, 1, kk} && wt->storage == std::vector<std::int64_t>{g, n, kk}) transposed = true;
    else return finish(e, param_invalid, "weight must be contiguous (g, K, N) or the transposed view of a (g, N, K) storage, strides " + dims_str({n * kk, 1, kk}));
  }
  e.c.ints["transposed"] = transposed;
  const aclDataType t1 = xa->dtype, t2 = wt->dtype;
  const bool fp8_pair = is_fp8(t1) && is_fp8(t2), hif8_pair = t1 == ACL_HIFLOAT8 && t2 == ACL_HIFLOAT8;
  const bool fp4_pair = t1 == ACL_FLOAT4_E2M1 && t2 == ACL_FLOAT4_E2M1;
  if (!fp8_pair && !hif8_pair && !fp4_pair) return finish(e, param_invalid, "x / weight data types are not a 950 quantized combination");
  if (groupListOptional->dtype != ACL_INT64 || groupListOptional->dims != std::vector<std::int64_t>{g})
    return finish(e, param_invalid, "groupListOptional must be INT64 of shape (g,) = " + dims_str({g}));
  if (yo->dims != std::vector<std::int64_t>{mm, n} || (yo->dtype != ACL_FLOAT && yo->dtype != ACL_BF16))
    return finish(e, param_invalid, "out must be FLOAT / BFLOAT16 (M, N) = " + dims_str({mm, n}));
  const aclTensor* bias = biasOptional != nullptr && !biasOptional->items.empty() ? biasOptional->items[0] : nullptr;
  using minifloat::granularity;
  const format_id f1 = format_of(t1), f2 = format_of(t2);
  minifloat::quant_scheme a_s, b_s;
  const std::int64_t kb2 = cdiv(cdiv(kk, 32), 2);
  if (sc->dtype == ACL_FLOAT8_E8M0) {
    if (pt->dtype != ACL_FLOAT8_E8M0) return finish(e, param_invalid, "mx: perTokenScale must be FLOAT8_E8M0");
    if (hif8_pair) return finish(e, param_invalid, "mx takes FP8 or FP4");
    const std::vector<std::int64_t> want_s = transposed ? std::vector<std::int64_t>{g, n, kb2, 2} : std::vector<std::int64_t>{g, kb2, n, 2};
    if (sc->dims != want_s) return finish(e, param_invalid, "mx scale must have shape " + dims_str(want_s) + ", got " + dims_str(sc->dims));
    if (pt->dims != std::vector<std::int64_t>{mm, kb2, 2}) return finish(e, param_invalid, "mx perTokenScale must have shape " + dims_str({mm, kb2, 2}) + ", got " + dims_str(pt->dims));
    if (bias != nullptr && !(fp4_pair && bias->dtype == ACL_FLOAT && bias->dims == std::vector<std::int64_t>{g, n}))
      return finish(e, param_invalid, "mx bias is FLOAT (g, N) and only with FLOAT4_E2M1");
    if (fp4_pair && (kk % 2 != 0 || kk == 2 || (!transposed && n % 2 != 0))) return finish(e, param_invalid, "FP4 mx needs K even and not 2 (N even when not transposed)");
    a_s = mx_scheme_of(f1, 1), b_s = mx_scheme_of(f2, transposed ? 1 : 0);
  } else {
    if (sc->dtype != ACL_FLOAT || pt->dtype != ACL_FLOAT) return finish(e, param_invalid, not_emulated("scale types other than FLOAT / FLOAT8_E8M0"));
    if (fp4_pair) return finish(e, param_invalid, "FLOAT4_E2M1 needs mx scales");
    if (bias != nullptr) return finish(e, param_invalid, "FP8 / HIFLOAT8 grouped quantization takes no bias");
    if (sc->dims.size() == 3) {  // G-B: gsM = 1, gsN = gsK = 128
      const std::vector<std::int64_t> want_s = transposed ? std::vector<std::int64_t>{g, cdiv(n, 128), cdiv(kk, 128)} : std::vector<std::int64_t>{g, cdiv(kk, 128), cdiv(n, 128)};
      if (sc->dims != want_s) return finish(e, param_invalid, "G-B scale must have shape " + dims_str(want_s) + ", got " + dims_str(sc->dims));
      if (pt->dims != std::vector<std::int64_t>{mm, cdiv(kk, 128)}) return finish(e, param_invalid, "G-B perTokenScale must have shape " + dims_str({mm, cdiv(kk, 128)}));
      a_s = scheme_of(f1, granularity::block, 1, 128), b_s = scheme_of(f2, granularity::block, 128, 128);
    } else {
      // per output channel of a (K, N) weight: one K x 1 block per column of each expert
      if (sc->dims == std::vector<std::int64_t>{g} || sc->dims == std::vector<std::int64_t>{g, 1}) b_s = scheme_of(f2, granularity::tensor);
      else if (sc->dims == std::vector<std::int64_t>{g, n})
        b_s = transposed ? scheme_of(f2, granularity::channel) : scheme_of(f2, granularity::block, static_cast<std::size_t>(kk), 1);
      else return finish(e, param_invalid, "scale must be (g,), (g, 1) or (g, N), got " + dims_str(sc->dims));
      if (pt->dims == std::vector<std::int64_t>{mm}) a_s = scheme_of(f1, granularity::token);
      else if (pt->dims == std::vector<std::int64_t>{g} || pt->dims == std::vector<std::int64_t>{g, 1}) a_s = scheme_of(f1, granularity::tensor);
      else return finish(e, param_invalid, "perTokenScale must be (M,), (g,) or (g, 1), got " + dims_str(pt->dims));
    }
  }
  snap sx = take(xa), sw = take(wt), ssc = take(sc), spt = take(pt), sgl = take(groupListOptional), sy = take(yo), sb = take(bias);
  if (transposed) sw.dims = {g, n, kk}, sw.strides = contiguous_strides(sw.dtype, sw.dims);  // the storage, read as B (g, N, K)
  auto* ex = make_executor(e, "aclnnGroupedMatmulV4", 8192,
                           [=]() mutable {
                             std::vector<std::int64_t> sizes(static_cast<std::size_t>(g));
                             std::memcpy(sizes.data(), sgl.data, sizes.size() * sizeof(std::int64_t));
                             if (groupListType == 0)  // cumulative sums -> counts
                               for (std::size_t i = sizes.size(); i-- > 1;) sizes[i] -= sizes[i - 1];
                             return cpu_call([&](be::cpu_backend& cpu) {
                               const auto um = static_cast<std::size_t>(mm), un = static_cast<std::size_t>(n),
                                          uk = static_cast<std::size_t>(kk), ug = static_cast<std::size_t>(g);
                               std::vector<std::uint8_t> pa, pb;
                               be::quantized_view qa{a_s, sx.view(), spt.view()}, qb{b_s, sw.view(), ssc.view()};
                               if (a_s.gran == granularity::mx) {
                                 qa = mx_operand(sx, spt, 1, um, uk, 1, pa);
                                 qb = transposed ? mx_operand(sw, ssc, ug, un, uk, 1, pb) : mx_operand(sw, ssc, ug, uk, un, 0, pb);
                               }
                               cpu.grouped_gemm(qa, qb, be::make_tensor(sizes.data(), be::int64, {g}),
                                                sb.present ? sb.view() : be::tensor_view{}, sy.view(),
                                                transposed ? minifloat::gemm_layout::nk : minifloat::gemm_layout::kn);
                             });
                           },
                           {&sx, &sw, &ssc, &spt, &sgl, &sy, &sb});
  return accept(e, ex, workspaceSize, executor);
}
aclnnStatus aclnnGroupedMatmulV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return run_phase("aclnnGroupedMatmulV4", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
