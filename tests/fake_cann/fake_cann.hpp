#pragma once
// TEST-ONLY: the journal of the fake CANN library (fake_cann.cpp). The fake defines the ACL runtime
// and aclnn functions the minifloat Ascend shim calls, with the documented prototypes
// (CANN headers acl/, aclnn/, aclnnop/), and
//   * records every call: API name, tensors (aclDataType id, view dims, strides, storage dims,
//     offset, format, address), integer / real / string arguments (dstType, axis, groupSize,
//     roundMode, quantMode, ...), workspace sizes and addresses, executors and streams;
//   * enforces the two-phase protocol (an executor comes from the matching GetWorkspaceSize, is
//     run once, with the workspace size phase 1 returned, on a live device buffer of that size);
//   * validates arguments against the operator docs (dtype ids, shapes of outputs and scales,
//     round-mode strings per dstType, groupSize combinations) and rejects with 161001 / 161002 and
//     a message aclGetRecentErrMsg() returns;
//   * models device memory and the stream: aclrtMalloc blocks, operators (and aclrtMemsetAsync)
//     queued at launch and run at aclrtSynchronizeStream, so freeing or copying a buffer that
//     queued work still uses, or passing a host pointer as device memory, is caught;
//   * computes results with the minifloat CPU backend (or, for the two operators that multiply by
//     their scale, straight from the documented formula y = round(x * scale); aclnnInplaceCopy as a
//     strided element copy). MX scales cross in the CANN paired layout, which the fake converts to
//     and from the library's plain layout with the library's own mx_scales_to_cann /
//     mx_scales_from_cann, independently of the shim's strided copies.
// Violations that do not map onto a status (leaks, use-after-free, misaligned data) are collected
// in violations(); tests assert it is empty.
//
// This is a stand-in written from the documentation: it proves the shim calls what the docs
// describe, in the documented way. It cannot prove the docs describe the hardware.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fake_cann {

struct tensor_record {
  bool present = false;
  int dtype = -1;  ///< aclDataType number
  std::vector<std::int64_t> dims, strides, storage_dims;
  std::int64_t offset = 0;
  int format = -1;
  std::uintptr_t data = 0;
};

struct call {
  std::string api;
  std::map<std::string, tensor_record> tensors;
  std::map<std::string, std::vector<tensor_record>> lists;
  std::map<std::string, long long> ints;
  std::map<std::string, double> reals;
  std::map<std::string, std::string> strings;
  std::uint64_t workspace_size = 0;  ///< phase 1: returned; phase 2: passed
  std::uintptr_t workspace = 0;      ///< phase 2
  int executor = -1;                 ///< executor id (phase 1: created; phase 2: passed; -1 unknown)
  int stream = -1;                   ///< stream id (phase 2, synchronize)
  int status = 0;
};

/// Every call since the last reset(), in order.
const std::vector<call>& calls();
/// The calls to one API.
std::vector<call> calls_named(std::string_view api);
/// Index of the first / last call to `api` in calls() (-1 if none).
long first_index(std::string_view api);
long last_index(std::string_view api);

/// Protocol and memory violations since the last reset() (see the header comment).
const std::vector<std::string>& violations();
/// Returns the violations and forgets them (for tests that provoke them on purpose).
std::vector<std::string> take_violations();

/// Clears the journal and the violations. Live objects stay (leaks are still counted).
void reset();

/// aclrtGetSocName's answer (default "Ascend950PR_fake").
void set_soc_name(std::string name);

/// The next call to `api` fails with `status` and `message` (then the injection is used up).
void fail_next(std::string api, int status, std::string message);

struct counters {
  long live_tensors = 0;      ///< aclCreateTensor minus destroyed (lists destroy their members)
  long live_lists = 0;
  long pending_executors = 0;  ///< made by phase 1, not yet run by phase 2
  long queued_ops = 0;         ///< launched, not yet synchronized
  long live_buffers = 0;       ///< aclrtMalloc minus aclrtFree
  long live_streams = 0;
  long device_refs = 0;        ///< aclrtSetDevice minus aclrtResetDevice
  long init_refs = 0;          ///< aclInit minus aclFinalize
};
counters state();

}  // namespace fake_cann
