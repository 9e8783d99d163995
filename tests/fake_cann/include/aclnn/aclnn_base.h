/* TEST-ONLY stand-in (see acl/acl_base.h). */
#ifndef MINIFLOAT_FAKE_CANN_ACLNN_BASE_H
#define MINIFLOAT_FAKE_CANN_ACLNN_BASE_H

#include "../acl/acl_rt.h"
#include "acl_meta.h"

#endif
