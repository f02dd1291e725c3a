// A precompiled kernel as the call pipeline runs it: a Kernel for one call, whose spec holds the
// image, its entry point's name and the call's scalars. The backend loads the image's module
// once per device and keeps it in its memory cache, so that a kernel made for each call finds
// it there.
#pragma once

#include <kjit/kernel.h>
#include <kjit/precompiled.h>

#include <cstddef>
#include <string>
#include <vector>

namespace kjit {

/// The kernel |name| of |compiled_source| for a call with |inputs| inputs and |outputs|
/// outputs, checked: a name or image that cannot be right, or an entry that PTX text does not
/// declare, is an error here, before any device is asked. The spec keeps |compiled_source|
/// (moved in: an image may be megabytes, and a kernel is made for each call).
Kernel precompiled_kernel(const std::string& name, std::string compiled_source, size_t inputs,
                          size_t outputs, std::vector<ScalarArg> scalars, int shared_memory,
                          bool ensure_row_contiguous);

}  // namespace kjit
