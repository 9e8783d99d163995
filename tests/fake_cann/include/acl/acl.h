/* TEST-ONLY stand-in (see acl_base.h). */
#ifndef MINIFLOAT_FAKE_CANN_ACL_H
#define MINIFLOAT_FAKE_CANN_ACL_H

#include "acl_base.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

aclError aclInit(const char *configPath);
aclError aclFinalize(void);

#ifdef __cplusplus
}
#endif

#endif
