#include "cache/stats.h"

namespace kjit::cache {

Stats& stats() {
  static Stats s;
  return s;
}

}  // namespace kjit::cache
