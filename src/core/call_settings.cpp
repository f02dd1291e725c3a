#include "core/call_settings.h"

#include <kjit/errors.h>

#include <algorithm>
#include <bit>
#include <set>

#include "core/shape_check.h"

namespace kjit {

OwnedSettings::OwnedSettings(const CallSettings& s)
    : output_shapes(s.output_shapes),
      output_dtypes(s.output_dtypes),
      grid(s.grid),
      threadgroup(s.threadgroup),
      template_args(s.template_args),
      init_value(s.init_value),
      verbose(s.verbose) {}

bool OwnedSettings::matches(const CallSettings& s) const {
  auto same_bits = [](std::optional<double> a, std::optional<double> b) {
    return a.has_value() == b.has_value() &&
           (!a || std::bit_cast<uint64_t>(*a) == std::bit_cast<uint64_t>(*b));
  };
  return grid == s.grid && threadgroup == s.threadgroup && verbose == s.verbose &&
         same_bits(init_value, s.init_value) && output_dtypes == s.output_dtypes &&
         output_shapes == s.output_shapes && template_args == s.template_args;
}

void check_count(const KernelSpec& spec, const char* param, const std::vector<std::string>& names,
                 size_t got, bool show_names) {
  if (got == names.size()) return;
  std::string message = prefix_named(spec) + param + ": expected " + std::to_string(names.size());
  if (show_names) {
    std::string listed;
    for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
    message += " (" + listed + ")";
  }
  throw ValueError(message + ", got " + std::to_string(got));
}

void check_settings(const KernelSpec& spec, const CallSettings& settings) {
  const size_t n_out = spec.output_names.size();
  check_count(spec, "output_shapes", spec.output_names, settings.output_shapes.size());
  check_count(spec, "output_dtypes", spec.output_names, settings.output_dtypes.size());
  const std::vector<Shape>& output_shapes = settings.output_shapes;
  const Dim3 grid = settings.grid, threadgroup = settings.threadgroup;
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  const int64_t t[3] = {threadgroup.x, threadgroup.y, threadgroup.z};
  for (int d = 0; d < 3; ++d) {
    if (g[d] < 0 || g[d] > kMaxGridDim) {
      throw ValueError(
          prefix_named(spec) + "grid: each size must be in [0, 2^32-1] threads, got (" +
          std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " + std::to_string(g[2]) + ")");
    }
    if (t[d] < 1 || t[d] > kMaxThreadsPerGroup) {
      throw ValueError(prefix_named(spec) + "threadgroup: each size must be in [1, 1024], got (" +
                       std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " +
                       std::to_string(t[2]) + ")");
    }
  }
  // Every group gets a number (and on the CPU an iteration): their count must fit in 64 bits,
  // as it does whenever the count of threads does.
  uint64_t threads = 1, groups = 1;
  bool many_threads = false;
  for (int d = 0; d < 3; ++d) {
    many_threads |= __builtin_mul_overflow(threads, static_cast<uint64_t>(g[d]), &threads);
  }
  for (int d = 0; d < 3 && many_threads; ++d) {
    const uint64_t per_dim = static_cast<uint64_t>((g[d] + t[d] - 1) / t[d]);
    if (__builtin_mul_overflow(groups, per_dim, &groups)) {
      throw ValueError(prefix_named(spec) + "grid: (" + std::to_string(g[0]) + ", " +
                       std::to_string(g[1]) + ", " + std::to_string(g[2]) +
                       ") threads in threadgroups of (" + std::to_string(t[0]) + ", " +
                       std::to_string(t[1]) + ", " + std::to_string(t[2]) +
                       ") are more than 2^64 threadgroups");
    }
  }
  for (size_t o = 0; o < n_out; ++o) {
    if (output_shapes[o].size() > static_cast<size_t>(kMaxNdim)) {
      throw ValueError(prefix_named(spec) + "output_shapes[" + std::to_string(o) + "] has " +
                       std::to_string(output_shapes[o].size()) +
                       " dimensions; at most 10 are supported");
    }
    check_dimensions(output_shapes[o], [&] {
      return prefix_named(spec) + "output_shapes[" + std::to_string(o) + "]";
    });
  }
}

void check_template_args(const KernelSpec& spec, const TemplateArgs& args) {
  std::set<std::string> seen;
  for (const auto& [name, value] : args) {
    check_usable_name(prefix_named(spec) + "template", name, spec.dialect);
    if (!seen.insert(name).second) {
      throw ValueError(prefix_named(spec) + "template: the name '" + name +
                       "' is given more than once");
    }
    auto clash = [&](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), name) != v.end();
    };
    if (clash(spec.input_names) || clash(spec.output_names)) {
      throw ValueError(prefix_named(spec) + "template: '" + name +
                       "' is also the name of an input or output");
    }
    if (const std::string clash = input_attribute_named(spec.input_names, name); !clash.empty()) {
      throw ValueError(prefix_named(spec) + "template: '" + name + "' is the name of " + clash);
    }
  }
}

void check_atomic_outputs(const KernelSpec& spec, const std::vector<Dtype>& outputs) {
  if (!spec.atomic_outputs || spec.dialect != Dialect::Metal) return;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Dtype d = outputs[o];
    if (d != Dtype::Int32 && d != Dtype::UInt32 && d != Dtype::Float32) {
      throw ValueError(prefix_named(spec) + "output_dtypes[" + std::to_string(o) +
                       "]: " + std::string(dtype_name(d)) +
                       " outputs cannot be atomic (atomic_outputs=True needs int32, uint32 or "
                       "float32, as on Metal)");
    }
  }
}

}  // namespace kjit
