/* TEST-ONLY stand-in (see acl/acl_base.h): tensor descriptors and the executor, docs/formats/ascend.md#calling-convention. */
#ifndef MINIFLOAT_FAKE_CANN_ACL_META_H
#define MINIFLOAT_FAKE_CANN_ACL_META_H

#include "../acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t aclnnStatus;

typedef struct aclTensor aclTensor;
typedef struct aclTensorList aclTensorList;
typedef struct aclOpExecutor aclOpExecutor;

/* Strides and offset in elements; tensorData is a device address (32-byte aligned in 9.x). */
aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);
/* Destroys the list and the tensors in it. */
aclnnStatus aclDestroyTensorList(const aclTensorList *array);

#ifdef __cplusplus
}
#endif

#endif
