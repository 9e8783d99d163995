/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnDynamicMxQuantV3 (docs/formats/ascend.md#quantize-operators). */
#ifndef MINIFLOAT_FAKE_ACLNN_DYNAMIC_MX_QUANT_V3_H
#define MINIFLOAT_FAKE_ACLNN_DYNAMIC_MX_QUANT_V3_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnDynamicMxQuantV3GetWorkspaceSize(const aclTensor *x, int64_t axis, char *roundModeOptional,
                                                  int64_t dstType, int64_t blocksize, int64_t scaleAlg, double dstTypeMax,
                                                  double maxLowBound, const aclTensor *yOut, const aclTensor *mxscaleOut,
                                                  uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnDynamicMxQuantV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
