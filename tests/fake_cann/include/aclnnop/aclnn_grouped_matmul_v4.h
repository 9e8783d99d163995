/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnGroupedMatmulV4 (docs/formats/ascend.md#gemm-operators). */
#ifndef MINIFLOAT_FAKE_ACLNN_GROUPED_MATMUL_V4_H
#define MINIFLOAT_FAKE_ACLNN_GROUPED_MATMUL_V4_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnGroupedMatmulV4GetWorkspaceSize(
    const aclTensorList *x, const aclTensorList *weight, const aclTensorList *biasOptional,
    const aclTensorList *scaleOptional, const aclTensorList *offsetOptional, const aclTensorList *antiquantScaleOptional,
    const aclTensorList *antiquantOffsetOptional, const aclTensorList *perTokenScaleOptional,
    const aclTensor *groupListOptional, const aclTensorList *activationInputOptional,
    const aclTensorList *activationQuantScaleOptional, const aclTensorList *activationQuantOffsetOptional,
    int64_t splitItem, int64_t groupType, int64_t groupListType, int64_t actType, aclTensorList *out,
    aclTensorList *activationFeatureOutOptional, aclTensorList *dynQuantScaleOutOptional, uint64_t *workspaceSize,
    aclOpExecutor **executor);
aclnnStatus aclnnGroupedMatmulV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
