#include "backend/cpu/module.h"

#include <kjit/errors.h>

#include <dlfcn.h>
#include <link.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "backend/cpu/build_directory.h"

namespace kjit::cpu {
namespace {

// The executable segment of the loaded object that holds |address|.
CodeRange code_around(const void* address) {
  struct Search {
    uintptr_t address;
    CodeRange found;
  } search{reinterpret_cast<uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& s = *static_cast<Search*>(data);
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_X)) continue;
          const uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
          if (s.address >= begin && s.address < begin + segment.p_memsz) {
            s.found = {begin, begin + segment.p_memsz};
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.found;
}

}  // namespace

std::shared_ptr<const Module> Module::load(std::string_view shared_object) {
  // dlopen needs a file. Each load gets a fresh name (the loader matches libraries by name), and
  // the file is removed once mapped.
  std::optional<BuildDirectory> dir;
  try {
    dir.emplace("kjit_kernel.so", shared_object);
  } catch (const CompileError& e) {
    throw CompileError(std::string("kjit: cannot load a compiled kernel: ") + e.what(), e.log(),
                       "");
  }
  void* handle = dlopen(dir->file("kjit_kernel.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // dlerror clears the message it returns: read it once.
    const char* error = dlerror();
    const std::string why = error ? error : "unknown error";
    // A file system that does not let the process map code, which statvfs did not show.
    const bool no_exec = why.find("failed to map segment") != std::string::npos ||
                         why.find(std::strerror(EPERM)) != std::string::npos;
    throw CompileError("kjit: cannot load a compiled kernel: " + why +
                           (no_exec ? " (the file system of " + dir->path() +
                                          " may not allow executables: set TMPDIR to a "
                                          "directory on one that does)"
                                    : ""),
                       "", "");
  }
  auto entry = reinterpret_cast<kjit_cpu_entry_fn>(dlsym(handle, KJIT_CPU_ENTRY_SYMBOL));
  if (!entry) {
    dlclose(handle);
    throw std::runtime_error("kjit: a compiled kernel lacks its entry point");
  }
  std::shared_ptr<Module> m(new Module());
  m->handle_ = handle;
  m->entry_ = entry;
  m->small_grid_entry_ =
      reinterpret_cast<kjit_cpu_entry_fn>(dlsym(handle, KJIT_CPU_SMALL_GRID_ENTRY_SYMBOL));
  m->bytes_ = shared_object.size();
  m->code_ = code_around(reinterpret_cast<const void*>(entry));
  if (m->code_.begin == m->code_.end) {
    // Ctrl-C stops a kernel safely only inside its code.
    throw std::runtime_error("kjit: a compiled kernel's code was not found in the process");
  }
  return m;
}

kjit_cpu_entry_fn Module::entry(const unsigned (&grid)[3]) const {
  const bool small = grid[0] <= KJIT_CPU_SMALL_GRID && grid[1] <= KJIT_CPU_SMALL_GRID &&
                     grid[2] <= KJIT_CPU_SMALL_GRID;
  return small && small_grid_entry_ ? small_grid_entry_ : entry_;
}

Module::~Module() {
  if (handle_) dlclose(handle_);
}

}  // namespace kjit::cpu
