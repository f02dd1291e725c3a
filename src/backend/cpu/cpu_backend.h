// The CPU backend: builds generated sources into loaded modules (through the memory and disk
// caches) and runs launches on the thread pool.
#pragma once

#include <kjit/array.h>
#include <kjit/kernel.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/module.h"
#include "codegen/kernel_spec.h"
#include "core/launch_dims.h"

namespace kjit::cpu {

/// The module for |source|, from memory, from disk, or compiled now.
std::shared_ptr<const Module> build(const KernelSpec& spec, const std::string& source);

/// Runs every thread of the launch; returns when all have finished.
void launch(const Module& module, const std::vector<Array>& inputs,
            const std::vector<Array>& outputs, const LaunchDims& dims);

uint64_t memory_entries();
void clear_memory();

}  // namespace kjit::cpu
