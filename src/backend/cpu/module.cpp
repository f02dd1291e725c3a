#include "backend/cpu/module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

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
  // the file is unlinked once mapped.
  static std::atomic<unsigned> counter{0};
  const char* tmp_env = std::getenv("TMPDIR");
  std::string path = std::string(tmp_env && *tmp_env ? tmp_env : "/tmp") + "/kjit-" +
                     std::to_string(getpid()) + "-" + std::to_string(counter++) + "-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("kjit: cannot create a file to load a kernel from");
  size_t done = 0;
  while (done < shared_object.size()) {
    ssize_t n = ::write(fd, shared_object.data() + done, shared_object.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  void* handle = done == shared_object.size() ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)
                                              : nullptr;
  // dlerror clears the message it returns: read it once.
  const char* load_error = handle ? nullptr : dlerror();
  std::string error = load_error ? load_error : "short write";
  ::unlink(path.c_str());
  if (!handle) throw std::runtime_error("kjit: cannot load a compiled kernel: " + error);
  auto entry = reinterpret_cast<kjit_cpu_entry_fn>(dlsym(handle, KJIT_CPU_ENTRY_SYMBOL));
  if (!entry) {
    dlclose(handle);
    throw std::runtime_error("kjit: a compiled kernel lacks its entry point");
  }
  std::shared_ptr<Module> m(new Module());
  m->handle_ = handle;
  m->entry_ = entry;
  m->bytes_ = shared_object.size();
  m->code_ = code_around(reinterpret_cast<const void*>(entry));
  if (m->code_.begin == m->code_.end) {
    // Ctrl-C stops a kernel safely only inside its code.
    throw std::runtime_error("kjit: a compiled kernel's code was not found in the process");
  }
  return m;
}

Module::~Module() {
  if (handle_) dlclose(handle_);
}

}  // namespace kjit::cpu
