/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnQuantMatmulV5 (docs/formats/ascend.md#gemm-operators). */
#ifndef MINIFLOAT_FAKE_ACLNN_QUANT_MATMUL_V5_H
#define MINIFLOAT_FAKE_ACLNN_QUANT_MATMUL_V5_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* groupSize = gsK | gsN << 16 | gsM << 32. */
aclnnStatus aclnnQuantMatmulV5GetWorkspaceSize(const aclTensor *x1, const aclTensor *x2, const aclTensor *x1Scale,
                                               const aclTensor *x2Scale, const aclTensor *yScale,
                                               const aclTensor *x1Offset, const aclTensor *x2Offset,
                                               const aclTensor *yOffset, const aclTensor *bias, bool transposeX1,
                                               bool transposeX2, int64_t groupSize, aclTensor *out,
                                               uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnQuantMatmulV5(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
