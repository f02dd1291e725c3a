#include "backend/cpu/module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace kjit::cpu {

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
  return m;
}

Module::~Module() {
  if (handle_) dlclose(handle_);
}

}  // namespace kjit::cpu
