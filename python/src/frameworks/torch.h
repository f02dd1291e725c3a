// torch tensors, read and made through kjit._torch (torch's C++ API) where it serves, else through
// torch's DLPack entry points.
#pragma once

#include <string>

#include "../torch_bridge.h"

namespace kjit::python {

/// kjit._torch's bridge once it has loaded: torch is imported, kjit._torch was built for this
/// very torch, and KJIT_TORCH_BRIDGE is not 0. nullptr otherwise. Looked for when the first torch
/// tensor is seen (kjit never imports torch itself).
const TorchBridge* torch_bridge();

/// How torch tensors are read and made in this process, and why when not through kjit._torch
/// (for `python -m kjit doctor`). Looks for the bridge as torch_bridge() does.
std::string torch_path();

}  // namespace kjit::python
