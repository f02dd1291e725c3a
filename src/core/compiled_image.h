// What a precompiled kernel's bytes are, read on the host: PTX text, a cubin (an ELF file) or
// a fatbin, and the entry points PTX declares. The driver reads them for real when it loads
// them; these checks give a clear error where no GPU is needed to give one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

enum class ImageKind { Ptx, Cubin, Fatbin };

/// |image|'s kind, or none when it is neither PTX (text declaring a .entry), nor a cubin nor a
/// fatbin (by their headers).
std::optional<ImageKind> image_kind(std::string_view image);

/// The names of the kernels (.entry) that PTX text declares, in its order.
std::vector<std::string> ptx_entries(std::string_view ptx);

}  // namespace kjit
