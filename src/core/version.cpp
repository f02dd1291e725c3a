#include <kjit/version.h>

namespace kjit {

const char* version() { return KJIT_VERSION; }

}  // namespace kjit
