// Byte counts and counts from environment variables (cache and pool sizes), read one way
// everywhere.
#pragma once

#include <cstdint>

namespace kjit {

/// The value of |name| as a number of bytes of at least |minimum|; |fallback| when unset, and
/// when unusable, with a warning that names the variable.
uint64_t bytes_from_env(const char* name, uint64_t fallback, uint64_t minimum = 0);
/// The same for a number of entries.
uint64_t count_from_env(const char* name, uint64_t fallback, uint64_t minimum = 0);

}  // namespace kjit
