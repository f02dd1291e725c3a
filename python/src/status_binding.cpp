// What `python -m kjit doctor` and `python -m kjit cache` report and do: the caches, the CPU
// backend's compiler, what the CUDA backend found, and how torch tensors are read.
#include <kjit/kjit.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "core/backend.h"
#include "frameworks/torch.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kjit::python {
namespace {

// A backend's status as a dict: a missing value is None, devices are (name, architecture).
nb::dict status_dict(const Backend& backend) {
  nb::dict out;
  for (const StatusEntry& entry : backend.status()) {
    out[entry.key.c_str()] = std::visit(
        [](const auto& v) -> nb::object {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::monostate>) {
            return nb::none();
          } else if constexpr (std::is_same_v<V, StatusEntry::Devices>) {
            nb::list devices;
            for (const auto& [name, arch] : v) devices.append(nb::make_tuple(name, arch));
            return devices;
          } else {
            return nb::cast(v);
          }
        },
        entry.value);
  }
  return out;
}

}  // namespace

void init_status(nb::module_& m) {
  m.def(
      "cache_info",
      [] {
        CacheInfo c = cache_info();
        nb::dict d;
        d["directory"] = c.directory;
        d["disk_enabled"] = c.disk_enabled;
        d["disk_entries"] = c.disk_entries;
        d["disk_bytes"] = c.disk_bytes;
        d["disk_limit_bytes"] = c.disk_limit_bytes;
        d["memory_entries"] = c.memory_entries;
        d["memory_bytes"] = c.memory_bytes;
        d["memory_limit_entries"] = c.memory_limit_entries;
        d["memory_limit_bytes"] = c.memory_limit_bytes;
        d["memory_evictions"] = c.memory_evictions;
        d["compiles"] = c.compiles;
        d["disk_hits"] = c.disk_hits;
        d["launches_again"] = c.launches_again;
        return d;
      },
      nb::sig("def cache_info() -> dict[str, object]"),
      "What the compile caches hold, and how many compiles, disk hits and launches made "
      "again from their record this process had: the disk cache's directory, entries, bytes and "
      "limit; the programs kept loaded in memory (memory_entries, memory_bytes), the limits of "
      "each device type's memory cache (memory_limit_entries, memory_limit_bytes) and how many "
      "programs those limits unloaded (memory_evictions).\n\n"
      "Example:\n"
      "    >>> sorted(kjit.cache_info())[:3]\n"
      "    ['compiles', 'directory', 'disk_bytes']");
  m.def(
      "host_compiler",
      [] {
        const nb::dict status = status_dict(backend_for(DeviceType::CPU));
        return nb::make_tuple(status["compiler"], status["compiler_found"]);
      },
      nb::sig("def host_compiler() -> tuple[str, bool]"),
      "The CPU backend's compiler: (path, found).");
  m.def(
      "cuda_status", [] { return status_dict(backend_for(DeviceType::CUDA)); },
      nb::sig("def cuda_status() -> dict[str, object]"),
      "What the CUDA backend found: driver and NVRTC libraries and versions, devices, and why "
      "it cannot run (empty when it can).");
  m.def("torch_path", &torch_path,
        "How torch tensors are read and made: through kjit._torch, or through DLPack and why. "
        "Call it after importing torch.");
  m.def(
      "add_library_search_dir",
      [](const std::string& dir) { backend_for(DeviceType::CUDA).add_library_search_dir(dir); },
      "dir"_a, "Adds a directory to search for CUDA libraries (NVRTC) before /usr/local/cuda.");
  m.def("clear_cache", &clear_cache,
        "Empties the compile caches: the CPU's in-memory cache of loaded programs, and the\n"
        "entries of the disk cache (KJIT_CACHE_DIR). Modules loaded on a GPU stay loaded.\n"
        "Kernels made before still run: they are compiled again when next called.\n\n"
        "Example:\n"
        "    >>> kjit.clear_cache()\n"
        "    >>> kjit.cache_info()['memory_entries']\n"
        "    0");
  m.def(
      "version", [] { return std::string(version()); },
      "The library version, as kjit.__version__ and python -m kjit --version show it.");
}

}  // namespace kjit::python
