// A compiled CPU kernel loaded into the process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "../../../prelude/target/cpu/abi.h"
#include "backend/cpu/code_range.h"

namespace kjit::cpu {

class Module {
 public:
  /// Loads a shared object from its bytes.
  static std::shared_ptr<const Module> load(std::string_view shared_object);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The entry point for a launch of |grid| threads per dimension: a region-mode kernel's
  /// small-grid one where the grid is small enough (prelude/target/cpu/abi.h).
  kjit_cpu_entry_fn entry(const unsigned (&grid)[3]) const;
  /// The addresses of the module's machine code.
  const CodeRange& code() const { return code_; }
  /// The size of the shared object it was loaded from.
  uint64_t bytes() const { return bytes_; }

 private:
  Module() = default;
  void* handle_ = nullptr;
  kjit_cpu_entry_fn entry_ = nullptr;
  kjit_cpu_entry_fn small_grid_entry_ = nullptr;  // null for kernels without one
  CodeRange code_;
  uint64_t bytes_ = 0;
};

}  // namespace kjit::cpu
