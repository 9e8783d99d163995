/* TEST-ONLY stand-in for the CANN header of the same name, written for minifloat's CI from the
 * public documentation summarised in docs/formats/ascend.md (data types, calling
 * convention). It declares only what the minifloat Ascend shim uses. It is
 * not the vendor header and carries none of its text; it is never installed. */
#ifndef MINIFLOAT_FAKE_CANN_ACL_BASE_H
#define MINIFLOAT_FAKE_CANN_ACL_BASE_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
#define ACL_SUCCESS 0

/* aclDataType: the values of docs/formats/ascend.md#data-types (runtime docs aclDataType.md). */
typedef enum {
  ACL_DT_UNDEFINED = -1,
  ACL_FLOAT = 0,
  ACL_FLOAT16 = 1,
  ACL_INT8 = 2,
  ACL_INT32 = 3,
  ACL_UINT8 = 4,
  ACL_INT64 = 9,
  ACL_BF16 = 27,
  ACL_INT4 = 29,
  ACL_COMPLEX32 = 33,
  ACL_HIFLOAT8 = 34,
  ACL_FLOAT8_E5M2 = 35,
  ACL_FLOAT8_E4M3FN = 36,
  ACL_FLOAT8_E8M0 = 37,
  ACL_FLOAT6_E3M2 = 38,
  ACL_FLOAT6_E2M3 = 39,
  ACL_FLOAT4_E2M1 = 40,
  ACL_FLOAT4_E1M2 = 41
} aclDataType;

/* Only ND is used (the doc samples build every tensor with ACL_FORMAT_ND). */
typedef enum {
  ACL_FORMAT_UNDEFINED = -1,
  ACL_FORMAT_NCHW = 0,
  ACL_FORMAT_NHWC = 1,
  ACL_FORMAT_ND = 2
} aclFormat;

/* The message of the most recent failure on this thread (may be empty). */
const char *aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif
