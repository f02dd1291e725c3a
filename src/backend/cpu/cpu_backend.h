// The CPU backend: builds generated sources into loaded modules (through the memory and disk
// caches) and runs launches on the thread pool.
#pragma once

#include "core/backend.h"

namespace kjit::cpu {

const Backend& backend();

}  // namespace kjit::cpu
