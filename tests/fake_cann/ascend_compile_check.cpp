// Compile-only check against a REAL CANN toolkit (built when -DMINIFLOAT_WITH_CANN=ON finds one):
// the shim's headers compile against the vendor's acl/aclnn headers, and acl_types.hpp's
// static_asserts compare our aclDataType numbers with the toolkit's enum. Nothing runs this.
#include <minifloat/backend/ascend/ascend.hpp>

static_assert(sizeof(minifloat::backend::ascend::ascend_backend) > 0);
