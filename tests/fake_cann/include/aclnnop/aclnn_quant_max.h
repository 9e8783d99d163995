/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnQuantMax (docs/formats/ascend.md#quantize-operators; ops-nn aclnnQuantMax.md). */
#ifndef MINIFLOAT_FAKE_ACLNN_QUANT_MAX_H
#define MINIFLOAT_FAKE_ACLNN_QUANT_MAX_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = Cast(x * scale, dstType, roundMode), amax = max(|x|); scale and amax have shape [1]. */
aclnnStatus aclnnQuantMaxGetWorkspaceSize(const aclTensor *x, const aclTensor *scale, char *roundMode, int64_t dstType,
                                          const aclTensor *y, const aclTensor *amax, uint64_t *workspaceSize,
                                          aclOpExecutor **executor);
aclnnStatus aclnnQuantMax(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
