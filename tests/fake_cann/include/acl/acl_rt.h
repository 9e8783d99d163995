/* TEST-ONLY stand-in (see acl_base.h): the runtime calls of the doc samples, docs/formats/ascend.md#calling-convention. */
#ifndef MINIFLOAT_FAKE_CANN_ACL_RT_H
#define MINIFLOAT_FAKE_CANN_ACL_RT_H

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void *aclrtStream;

typedef enum {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2
} aclrtMemMallocPolicy;

typedef enum {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3
} aclrtMemcpyKind;

aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);
/* Sets count bytes of device memory to value, in stream order (maxCount: the buffer's size). */
aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);
/* The SoC name, e.g. "Ascend950..." or "Ascend910B1". */
const char *aclrtGetSocName(void);

#ifdef __cplusplus
}
#endif

#endif
