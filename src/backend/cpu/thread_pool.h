// The worker threads that run a launch's groups: one per core, the calling thread included.
#pragma once

#include <cstdint>
#include <functional>

namespace kjit::cpu {

/// Runs fn(begin, end) over chunks of [0, n) on every core, the caller's thread included, and
/// returns when all are done. A call made while another is running runs on the caller alone.
void parallel_for(uint64_t n, const std::function<void(uint64_t, uint64_t)>& fn);

/// Number of threads parallel_for uses.
unsigned pool_size();

}  // namespace kjit::cpu
