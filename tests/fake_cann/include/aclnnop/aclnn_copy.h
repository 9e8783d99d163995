/* TEST-ONLY stand-in (see acl/acl_base.h): the documented two-phase prototypes of aclnnInplaceCopy
 * (selfRef = src element by element; both may be non-contiguous views, ND, rank 1-8). */
#ifndef MINIFLOAT_FAKE_ACLNN_COPY_H
#define MINIFLOAT_FAKE_ACLNN_COPY_H

#include "../aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef, const aclTensor *src, uint64_t *workspaceSize,
                                             aclOpExecutor **executor);
aclnnStatus aclnnInplaceCopy(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
