// Whole arrays converted from one dtype to another, element by element as NumPy's astype
// converts them.
#pragma once

#include <kjit/array.h>

#include <string_view>

namespace kjit {

/// Array::astype (include/kjit/array.h): |array| converted to |dtype| as NumPy's astype
/// converts, on the array's device, with every error a ValueError that starts with |where|.
Array cast(const Array& array, Dtype dtype, std::string_view where);

}  // namespace kjit
