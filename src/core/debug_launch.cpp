#include "core/debug_launch.h"

#include <kjit/errors.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/group_memory.h"
#include "core/device_ops.h"
#include "support/small_vector.h"

namespace kjit {
namespace {

// prelude/common/debug_view.h's report, as the host reads it; the arrays' bounds follow it.
struct DebugReport {
  enum Kind : int32_t { kOutOfBounds, kRace, kDivergence };
  uint32_t claimed;
  int32_t array;
  int32_t line;
  int32_t kind;
  int64_t index;
  uint32_t thread[3];
  uint32_t group[3];
  int64_t extent;
  int32_t dimension;
  int32_t rank;
  int64_t extents[4];
  uint32_t other_thread[3];
  int32_t other_line;
  int32_t wrote;
  int32_t other_wrote;
  alignas(16) unsigned char scratch[256];
};
static_assert(sizeof(DebugReport) == 384 && offsetof(DebugReport, index) == 16 &&
                  offsetof(DebugReport, thread) == 24 && offsetof(DebugReport, group) == 36 &&
                  offsetof(DebugReport, extent) == 48 && offsetof(DebugReport, extents) == 64 &&
                  offsetof(DebugReport, other_thread) == 96 &&
                  offsetof(DebugReport, scratch) == 128,
              "prelude/common/debug_view.h's layout");

struct Bounds {
  int64_t first = 0, end = 0;  // the indices from the array's data pointer
};

Bounds bounds_of(const ArrayRef& a) {
  Bounds b{0, 1};
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape[d] == 0) return {0, 0};
    const int64_t reach = (a.shape[d] - 1) * a.strides[d];
    (reach < 0 ? b.first : b.end) += reach;
  }
  return b;
}

int64_t element_count(const ArrayRef& a) {
  int64_t n = 1;
  for (int d = 0; d < a.ndim; ++d) n *= a.shape[d];
  return n;
}

// The two poisons an output starts with: NaNs with a payload for the floating types, byte
// patterns for the others. An element the kernel wrote cannot hold both, in two runs.
uint64_t poison(Dtype dtype, int which) {
  switch (dtype) {
    case Dtype::Float16:
      return which ? 0x7ea5 : 0x7e5a;
    case Dtype::BFloat16:
      return which ? 0x7fda : 0x7fe5;
    case Dtype::Float32:
      return which ? 0x7fda5a5a : 0x7fe5a5a5;
    case Dtype::Complex64:
      return which ? 0x7fda5a5a7fda5a5aull : 0x7fe5a5a57fe5a5a5ull;
    case Dtype::Float64:
      return which ? 0x7ffb5a5a5a5a5a5aull : 0x7ffca5a5a5a5a5a5ull;
    default:
      return which ? 0x5a5a5a5a5a5a5a5aull : 0xa5a5a5a5a5a5a5a5ull;
  }
}

std::string triple(const uint32_t v[3]) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) +
         ")";
}

// The group variable numbered |k| among a debug build's arrays, if |k| is one.
std::optional<codegen::GroupVariable> group_variable(const KernelSpec& spec, size_t k) {
  const size_t n_arrays = spec.input_names.size() + spec.output_names.size();
  if (k < n_arrays) return std::nullopt;
  std::vector<codegen::GroupVariable> groups = codegen::group_variables(spec);
  if (k - n_arrays >= groups.size()) return std::nullopt;
  return std::move(groups[k - n_arrays]);
}

std::string array_named(const KernelSpec& spec, size_t k) {
  const size_t n_in = spec.input_names.size(), n_out = spec.output_names.size();
  if (k < n_in) return "inputs[" + std::to_string(k) + "] ('" + spec.input_names[k] + "')";
  if (k < n_in + n_out) {
    return "outputs[" + std::to_string(k - n_in) + "] ('" + spec.output_names[k - n_in] + "')";
  }
  const std::vector<codegen::GroupVariable> groups = codegen::group_variables(spec);
  if (k >= n_in + n_out + groups.size()) {
    // An input's shape or strides: two to an input, the shape first.
    const size_t d = k - n_in - n_out - groups.size(), input = d / 2;
    const std::string name = input < n_in ? spec.input_names[input] : std::string("?");
    const char* what = d % 2 ? "strides" : "shape";
    return "'" + name + "_" + what + "' (the " + what + " of inputs[" + std::to_string(input) +
           "])";
  }
  const codegen::GroupVariable& g = groups[k - n_in - n_out];
  return codegen::group_variable_kind(spec.dialect, g.array) + " '" + g.name + "'";
}

std::string where(const DebugReport& r) {
  return "at line " + std::to_string(r.line) + " of the source, by the thread at " +
         triple(r.thread) + " in the grid (in threadgroup " + triple(r.group) + ")";
}

std::string out_of_bounds(const KernelSpec& spec, const DebugReport& r,
                          std::span<const Bounds> bounds) {
  const size_t k = static_cast<size_t>(r.array);
  // Group memory reports its own extents; inputs' and outputs' bounds are the host's.
  const Bounds b = k < bounds.size() ? bounds[k] : Bounds{0, r.extent};
  const bool dimension = k >= bounds.size() && r.rank > 1;
  const std::string valid =
      b.end == b.first ? std::string(dimension ? "that dimension" : "it") + " has no elements"
                       : std::string(dimension ? "its indices there are " : "its indices are ") +
                             std::to_string(b.first) + " to " + std::to_string(b.end - 1);
  const std::string at = dimension ? " in its dimension " + std::to_string(r.dimension + 1) +
                                         " of " + std::to_string(r.rank)
                                   : "";
  return "debug check: " + array_named(spec, k) + " was indexed at " + std::to_string(r.index) +
         at + ", outside the array (" + valid + "), " + where(r) +
         ". The access was skipped; the outputs may be wrong";
}

// Element |flat| of an array of |rank| dimensions with |extents|: "5" or "[1][3]".
std::string element_at(int64_t flat, int rank, const int64_t extents[4]) {
  if (rank <= 1 || rank > 4) return std::to_string(flat);
  std::string out;
  for (int d = rank; d-- > 0;) {
    const int64_t n = extents[d] > 0 ? extents[d] : 1;
    out = "[" + std::to_string(flat % n) + "]" + out;
    flat /= n;
  }
  return out;
}

std::string race(const KernelSpec& spec, const DebugReport& r) {
  const auto did = [](int32_t wrote) { return wrote ? "wrote" : "read"; };
  const size_t k = static_cast<size_t>(r.array);
  const std::optional<codegen::GroupVariable> g = group_variable(spec, k);
  const std::string what =
      g && !g->array ? "it" : "its element " + element_at(r.index, r.rank, r.extents);
  return "debug check: a race on " + array_named(spec, k) + ": the thread at " + triple(r.thread) +
         " in the grid " + did(r.wrote) + " " + what + " at line " + std::to_string(r.line) +
         " of the source, and the thread at " + triple(r.other_thread) + " " + did(r.other_wrote) +
         " it at line " + std::to_string(r.other_line) +
         ", with no barrier between them (in threadgroup " + triple(r.group) +
         "). On a GPU what each reads depends on the threads' timing";
}

std::string divergence(const DebugReport& r) {
  return "debug check: the threads of threadgroup " + triple(r.group) +
         " reached different barriers: the thread at " + triple(r.thread) +
         " in the grid waits at the barrier at line " + std::to_string(r.line) +
         " of the source, and the thread at " + triple(r.other_thread) +
         " waits at the barrier at line " + std::to_string(r.other_line) +
         ". CUDA and Metal require every thread of a group to reach the same barriers: on a GPU "
         "this can hang or give wrong results";
}

std::string finding(const KernelSpec& spec, const DebugReport& r, std::span<const Bounds> bounds) {
  switch (r.kind) {
    case DebugReport::kRace:
      return race(spec, r);
    case DebugReport::kDivergence:
      return divergence(r);
    default:
      return out_of_bounds(spec, r, bounds);
  }
}

// The indices of |a|'s elements (|count| Items, on the host) that hold |bits|, among |among|
// when given.
template <class Item>
std::vector<int64_t> holding(const unsigned char* a, int64_t count, uint64_t bits,
                             const std::vector<int64_t>* among) {
  const Item want = static_cast<Item>(bits);
  auto holds = [&](int64_t i) {
    Item item;
    std::memcpy(&item, a + i * sizeof(Item), sizeof(Item));
    return item == want;
  };
  std::vector<int64_t> found;
  if (among) {
    for (int64_t i : *among) {
      if (holds(i)) found.push_back(i);
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      if (holds(i)) found.push_back(i);
    }
  }
  return found;
}

// The indices of |a|'s elements (of |dtype|, on the host) that hold poison |which|.
std::vector<int64_t> poisoned(const unsigned char* a, Dtype dtype, int64_t count, int which,
                              const std::vector<int64_t>* among) {
  const uint64_t bits = poison(dtype, which);
  switch (itemsize(dtype)) {
    case 1:
      return holding<uint8_t>(a, count, bits, among);
    case 2:
      return holding<uint16_t>(a, count, bits, among);
    case 4:
      return holding<uint32_t>(a, count, bits, among);
    default:
      return holding<uint64_t>(a, count, bits, among);
  }
}

// "indices 3 to 9, 12 and 20 to 31" (the first few ranges of the sorted |indices|).
std::string ranges(const std::vector<int64_t>& indices) {
  constexpr int kShown = 4;
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (int64_t i : indices) {
    if (!spans.empty() && spans.back().second + 1 == i) {
      spans.back().second = i;
    } else {
      spans.push_back({i, i});
    }
  }
  std::string out = indices.size() == 1 ? "index " : "indices ";
  for (size_t s = 0; s < spans.size() && s < kShown; ++s) {
    if (s) out += s + 1 == spans.size() ? " and " : ", ";
    out += std::to_string(spans[s].first);
    if (spans[s].second != spans[s].first) out += " to " + std::to_string(spans[s].second);
  }
  if (spans.size() > kShown) {
    const size_t more = spans.size() - kShown;
    out += " and " + std::to_string(more) + (more == 1 ? " more range" : " more ranges");
  }
  return out;
}

}  // namespace

void run_debug_launch(const KernelSpec& spec, const PreparedLaunch& launch,
                      std::span<const ArrayRef> inputs, std::span<const ArrayRef> outputs,
                      uintptr_t stream, bool fresh_outputs) {
  const Device device = outputs[0].device;
  const Backend& backend = backend_for(device.type);
  const size_t arrays = inputs.size() + outputs.size();
  std::vector<Bounds> bounds(arrays);
  for (size_t k = 0; k < arrays; ++k) {
    bounds[k] = bounds_of(k < inputs.size() ? inputs[k] : outputs[k - inputs.size()]);
  }
  std::vector<unsigned char> state(sizeof(DebugReport) + arrays * sizeof(Bounds), 0);
  std::memcpy(state.data() + sizeof(DebugReport), bounds.data(), arrays * sizeof(Bounds));
  const std::shared_ptr<void> report = allocate(device, state.size(), stream);
  const int64_t report_bytes = static_cast<int64_t>(state.size()), one = 1;
  SmallVector<ArrayRef, 16> written(outputs.size() + 1);
  for (size_t o = 0; o < outputs.size(); ++o) written[o] = outputs[o];
  written[outputs.size()] = {.data = report.get(),
                             .dtype = Dtype::UInt8,
                             .device = device,
                             .ndim = 1,
                             .shape = &report_bytes,
                             .strides = &one,
                             .read_only = false};
  auto run = [&](int which) {
    backend.copy(report.get(), state.data(), state.size(), device.index, stream, false, true);
    for (size_t o = 0; fresh_outputs && o < outputs.size(); ++o) {
      const uint64_t bits = poison(outputs[o].dtype, which);
      backend.fill(outputs[o].data, &bits, itemsize(outputs[o].dtype),
                   static_cast<size_t>(element_count(outputs[o])), device.index, stream);
    }
    launch.run(inputs, written, stream);
    DebugReport r;
    backend.copy(&r, report.get(), sizeof r, device.index, stream, true, false);
    if (r.claimed) throw LaunchError(finding(spec, r, bounds));
  };
  run(0);
  if (!fresh_outputs) return;
  // Elements holding the first poison may hold a value the kernel wrote: those holding the
  // second after a run that started with it were never written.
  std::vector<std::vector<unsigned char>> host(outputs.size());
  auto read = [&](size_t o) {
    const size_t bytes =
        static_cast<size_t>(element_count(outputs[o])) * itemsize(outputs[o].dtype);
    host[o].resize(bytes);
    backend.copy(host[o].data(), outputs[o].data, bytes, device.index, stream, true, false);
  };
  std::vector<std::vector<int64_t>> suspects(outputs.size());
  bool any = false;
  for (size_t o = 0; o < outputs.size(); ++o) {
    read(o);
    suspects[o] = poisoned(host[o].data(), outputs[o].dtype, element_count(outputs[o]), 0, nullptr);
    any = any || !suspects[o].empty();
  }
  if (!any) return;
  run(1);
  std::string message;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (suspects[o].empty()) continue;
    read(o);
    const std::vector<int64_t> unwritten =
        poisoned(host[o].data(), outputs[o].dtype, element_count(outputs[o]), 1, &suspects[o]);
    if (unwritten.empty()) continue;
    message += std::string(message.empty() ? "debug check: " : "; ") +
               array_named(spec, inputs.size() + o) + ": " + std::to_string(unwritten.size()) +
               " of " + std::to_string(element_count(outputs[o])) +
               " elements still hold the poison fresh outputs start with (" + ranges(unwritten) +
               "): never written, or computed from their own unset value";
  }
  // An output read before it is written (out[i] += ...) needs an init value.
  if (!message.empty()) {
    throw LaunchError(message + ". An output the kernel adds to needs an init_value");
  }
}

}  // namespace kjit
