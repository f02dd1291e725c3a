// What `python -m kjit doctor` and `python -m kjit cache` report and do: the caches, the CPU
// backend's compiler, what the CUDA backend found, and how torch tensors are read.
#include <kjit/kjit.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "backend/cpu/host_compiler.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/library_search.h"
#include "frameworks/torch.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kjit::python {

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
        d["compiles"] = c.compiles;
        d["disk_hits"] = c.disk_hits;
        d["launches_again"] = c.launches_again;
        return d;
      },
      nb::sig("def cache_info() -> dict[str, object]"),
      "What the compile caches hold, and how many compiles, disk hits and bound kernels' GPU "
      "launches made again from their record this process had.");
  m.def(
      "host_compiler",
      [] {
        cpu::HostCompiler c = cpu::host_compiler();
        return nb::make_tuple(c.path, c.found);
      },
      nb::sig("def host_compiler() -> tuple[str, bool]"),
      "The CPU backend's compiler: (path, found).");
  m.def(
      "cuda_status",
      [] {
        const cuda::DriverApi& d = cuda::driver();
        const cuda::NvrtcApi& r = cuda::nvrtc();
        nb::dict out;
        int driver_version = 0;
        if (d.loaded) d.cuDriverGetVersion(&driver_version);
        out["driver"] = d.loaded ? nb::cast(d.library) : nb::none();
        out["driver_version"] = driver_version;
        out["driver_error"] = d.error;
        out["nvrtc"] = r.loaded ? nb::cast(r.library) : nb::none();
        out["nvrtc_version"] =
            r.loaded ? nb::cast(std::to_string(r.major) + "." + std::to_string(r.minor))
                     : nb::none();
        out["nvrtc_error"] = r.error;
        nb::list devs;
        for (int i = 0; i < cuda::device_count(); ++i) {
          const cuda::DeviceInfo& info = cuda::device_info(i);
          devs.append(nb::make_tuple(info.name, "sm_" + std::to_string(info.cc)));
        }
        out["devices"] = devs;
        out["unavailable"] = cuda::unavailable_reason();
        return out;
      },
      nb::sig("def cuda_status() -> dict[str, object]"),
      "What the CUDA backend found: driver and NVRTC libraries and versions, devices, and why "
      "it cannot run (empty when it can).");
  m.def("torch_path", &torch_path,
        "How torch tensors are read and made: through kjit._torch, or through DLPack and why. "
        "Call it after importing torch.");
  m.def("add_library_search_dir", &cuda::add_library_search_dir, "dir"_a,
        "Adds a directory to search for CUDA libraries (NVRTC) before /usr/local/cuda.");
  m.def("clear_cache", &clear_cache,
        "Empties the CPU's in-memory cache and deletes disk entries (modules loaded on a GPU stay "
        "loaded).");
  m.def(
      "version", [] { return std::string(version()); }, "The library version.");
}

}  // namespace kjit::python
