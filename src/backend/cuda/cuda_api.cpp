#include "backend/cuda/cuda_api.h"

#include <kjit/errors.h>

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/library_search.h"

namespace kjit::cuda {
namespace {

// Every candidate file for a library: the directories to search (in order), each listed
// newest version first, then the loader's default names.
std::vector<std::string> candidates(const std::string& stem,
                                    const std::vector<std::string>& default_names) {
  std::vector<std::string> out;
  for (const std::string& dir : library_search_dirs()) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    std::vector<std::string> found;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind(stem + ".so", 0) == 0) found.push_back(dir + "/" + name);
    }
    closedir(d);
    std::sort(found.rbegin(), found.rend());
    out.insert(out.end(), found.begin(), found.end());
  }
  out.insert(out.end(), default_names.begin(), default_names.end());
  return out;
}

template <class Api, class Resolve>
void load(Api& api, const std::vector<std::string>& files, Resolve resolve) {
  std::string tried;
  api.absent = true;
  for (const std::string& f : files) {
    void* handle = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // A file that is there but does not load (a missing dependency, another architecture)
      // is a broken install, not an absent one.
      const char* why = dlerror();
      if (why && !std::strstr(why, "No such file")) api.absent = false;
      tried += (tried.empty() ? "" : ", ") + f;
      continue;
    }
    api.absent = false;
    std::string missing = resolve(handle);
    if (missing.empty()) {
      api.loaded = true;
      api.library = f;
      return;
    }
    tried += (tried.empty() ? "" : ", ") + f + " (lacks " + missing + ")";
    dlclose(handle);
  }
  api.error = "not found (tried " + tried + ")";
}

// Resolves one function of an X-macro list into |a| from the library handle |h|, or returns its
// name from the loader's callback when the library lacks it.
#define KJIT_RESOLVE(name, ret, args)                      \
  a.name = reinterpret_cast<ret(*) args>(dlsym(h, #name)); \
  if (!a.name) return #name;

}  // namespace

namespace {

// In a child forked after cuInit succeeded: the parent's pid (the first fork's: a grandchild
// keeps its parent's).
std::atomic<pid_t> forked_from{0};

// Runs in the child between fork and anything else: async-signal-safe calls only, so the
// message is made later, when asked for.
void note_fork_in_child() {
  if (forked_from.load(std::memory_order_relaxed) == 0) {
    forked_from.store(getppid(), std::memory_order_relaxed);
  }
}

}  // namespace

const std::string& forked_reason() {
  static const std::string none;
  const pid_t parent = forked_from.load(std::memory_order_relaxed);
  if (parent == 0) return none;
  static const std::string message =
      "CUDA cannot be used in this process: it was forked from process " + std::to_string(parent) +
      " after that process had initialised CUDA, and a forked child cannot use its parent's "
      "CUDA. Start workers with multiprocessing's 'spawn' or 'forkserver' method "
      "(multiprocessing.get_context('spawn')); CPU kernels work here as they are";
  return message;
}

const DriverApi& driver() {
  static const DriverApi api = [] {
    DriverApi a;
    load(a, {"libcuda.so.1", "libcuda.so"}, [&](void* h) -> std::string {
      KJIT_CUDA_DRIVER_FUNCTIONS(KJIT_RESOLVE)
      return {};
    });
    if (a.loaded) {
      CUresult r = a.cuInit(0);
      if (r != CUDA_SUCCESS) {
        a.loaded = false;
        // A driver without a GPU to drive is a machine without CUDA, not a broken one.
        a.absent = r == CUDA_ERROR_NO_DEVICE;
        const char* name = nullptr;
        a.cuGetErrorName(r, &name);
        a.error = std::string("cuInit failed: ") + (name ? name : std::to_string(r).c_str());
      } else {
        pthread_atfork(nullptr, nullptr, note_fork_in_child);
      }
    }
    return a;
  }();
  return api;
}

std::vector<std::string> nvrtc_candidates() {
  return candidates("libnvrtc", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
}

const std::string& nvrtc_file_identity() {
  static const std::string id = [] {
    for (const std::string& f : nvrtc_candidates()) {
      char resolved[4096];
      struct stat st;
      if (f.find('/') != std::string::npos && realpath(f.c_str(), resolved) &&
          stat(resolved, &st) == 0) {
        return std::string(resolved) + " " + std::to_string(st.st_size) + " " +
               std::to_string(st.st_mtime);
      }
    }
    // Only the loader knows where a bare library name leads: ask NVRTC itself.
    const NvrtcApi& a = nvrtc();
    return a.loaded ? a.library + " " + std::to_string(a.major) + "." + std::to_string(a.minor)
                    : std::string("missing");
  }();
  return id;
}

const NvrtcApi& nvrtc() {
  static const NvrtcApi api = [] {
    NvrtcApi a;
    load(a, nvrtc_candidates(), [&](void* h) -> std::string {
      KJIT_NVRTC_FUNCTIONS(KJIT_RESOLVE)
      return {};
    });
    if (a.loaded) a.nvrtcVersion(&a.major, &a.minor);
    return a;
  }();
  return api;
}

#undef KJIT_RESOLVE

std::string error_text(CUresult result, const char* call) {
  const char* name = nullptr;
  const char* text = nullptr;
  driver().cuGetErrorName(result, &name);
  driver().cuGetErrorString(result, &text);
  std::string message = std::string(call) + " failed: " + (name ? name : "CUDA error") + ": " +
                        (text ? text : std::to_string(result));
  if (context_lost(result)) {
    message += " (the CUDA context is no longer usable; restart the process)";
  }
  return message;
}

bool context_lost(CUresult result) {
  // After a kernel fault every later call in the context fails the same way.
  return result == 700 || result == 716 || result == 719 || result == 720 || result == 999;
}

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const std::string message = error_text(result, call);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) throw OutOfMemory(message);
  throw LaunchError(message);
}

}  // namespace kjit::cuda
