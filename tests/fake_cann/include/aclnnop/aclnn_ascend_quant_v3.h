/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnAscendQuantV3 (docs/formats/ascend.md#quantize-operators). */
#ifndef MINIFLOAT_FAKE_ACLNN_ASCEND_QUANT_V3_H
#define MINIFLOAT_FAKE_ACLNN_ASCEND_QUANT_V3_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = round(x * scale + offset) (x * scale * scale with sqrtMode): the scale MULTIPLIES. */
aclnnStatus aclnnAscendQuantV3GetWorkspaceSize(const aclTensor *x, const aclTensor *scale, const aclTensor *offset,
                                               bool sqrtMode, const char *roundMode, int32_t dstType, int32_t axis,
                                               const aclTensor *y, uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnAscendQuantV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
