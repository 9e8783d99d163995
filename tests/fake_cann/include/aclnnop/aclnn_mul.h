/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnMul (broadcasting elementwise product). */
#ifndef MINIFLOAT_FAKE_ACLNN_MUL_H
#define MINIFLOAT_FAKE_ACLNN_MUL_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor);
aclnnStatus aclnnMul(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
