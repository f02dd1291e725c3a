#pragma once

namespace kjit {

/// The library version, part of every cache key.
const char* version();

}  // namespace kjit
