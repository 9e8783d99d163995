/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnCast (docs/formats/ascend.md#quantize-operators). */
#ifndef MINIFLOAT_FAKE_ACLNN_CAST_H
#define MINIFLOAT_FAKE_ACLNN_CAST_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnCast(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
