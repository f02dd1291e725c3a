// Where a call runs, as its arguments say.
#pragma once

#include <kjit/kjit.h>

#include <cstdint>
#include <optional>

namespace kjit::python {

/// Where a call runs, as given: the stream (none: the inputs' library's current stream), the
/// device, and whether the generated source is printed.
struct CallPlace {
  std::optional<uintptr_t> stream;
  std::optional<Device> device;
  bool verbose = false;
};

}  // namespace kjit::python
