/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnDynamicQuantV4 (docs/formats/ascend.md#quantize-operators). */
#ifndef MINIFLOAT_FAKE_ACLNN_DYNAMIC_QUANT_V4_H
#define MINIFLOAT_FAKE_ACLNN_DYNAMIC_QUANT_V4_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symmetric: scaleOut = max|x| / DTYPE_MAX per token / tensor, yOut = round(x / scaleOut). */
aclnnStatus aclnnDynamicQuantV4GetWorkspaceSize(const aclTensor *x, const aclTensor *smoothScalesOptional,
                                                const aclTensor *groupIndexOptional, int64_t dstType, bool isSymmetrical,
                                                const char *quantMode, float dstTypeMax, const aclTensor *yOut,
                                                const aclTensor *scaleOut, const aclTensor *offsetOut,
                                                uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnDynamicQuantV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
