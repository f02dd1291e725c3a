// The CPU backend: builds generated sources into loaded modules (through the memory and disk
// caches) and runs launches on the thread pool.
#pragma once

#include <kjit/kernel.h>

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cpu/module.h"
#include "core/kernel_spec.h"

namespace kjit::cpu {

/// The module for |source|, from memory, from disk, or compiled now.
std::shared_ptr<const Module> build(const KernelSpec& spec, const std::string& source);

/// Runs every group of |launch|; returns when all threads have finished.
void launch(const Module& module, const kjit_cpu_launch& launch);

uint64_t memory_entries();
void clear_memory();

}  // namespace kjit::cpu
