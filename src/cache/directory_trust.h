// Whether a cache directory is out of other users' reach: entries are machine code that kjit
// runs, so whoever can replace the directory (or one above it) could run code as this user.
#pragma once

#include <string>

namespace kjit::cache {

/// |path| made absolute against the working directory; empty when that has no name.
std::string absolute_path(const std::string& path);

/// Why a user other than this process's and root could replace |directory|, through one of
/// the existing directories above it (symbolic links followed), or empty when none can. A
/// directory above it may be writable by others only with the sticky bit (like /tmp).
std::string untrusted_parent(const std::string& directory);

}  // namespace kjit::cache
