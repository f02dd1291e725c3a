// Conversions between Python objects (NumPy, DLPack producers, scalars, dtype objects) and kjit's
// C++ types. Errors name the parameter they are about.
#pragma once

#include <kjit/kjit.h>
#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "core/array_ref.h"
#include "torch_bridge.h"

namespace kjit::python {

namespace nb = nanobind;

/// Names the parameter a conversion is about, e.g. "[kjit.metal_kernel] kernel 'k': inputs[0]
/// ('x')". The text is made only when an error is raised, so a call that goes well builds no
/// strings. A Param refers to its parent and labels: it lives no longer than they do.
class Param {
 public:
  Param(const char* text) : text_(text) {}  // NOLINT: a literal name converts implicitly
  Param(const std::string& text) : owned_(&text) {}  // NOLINT
  /// The prefix of every message about a kernel's call.
  static Param of_kernel(const Kernel& kernel) {
    Param p("");
    p.kernel_ = &kernel;
    return p;
  }
  /// |name| inside this one ("inputs" after the kernel's prefix).
  Param operator/(const char* name) const {
    Param p(name);
    p.parent_ = this;
    return p;
  }
  /// Element |i|, optionally labelled: "inputs[0] ('x')".
  Param at(size_t i, const std::string* label = nullptr) const {
    Param p("");
    p.parent_ = this;
    p.index_ = static_cast<long>(i);
    p.label_ = label;
    return p;
  }
  std::string str() const;

 private:
  const Param* parent_ = nullptr;
  const Kernel* kernel_ = nullptr;
  const char* text_ = "";
  const std::string* owned_ = nullptr;
  long index_ = -1;
  const std::string* label_ = nullptr;
};

/// The array library an object belongs to; outputs are returned in the inputs' library.
enum class Framework { None, Kjit, Numpy, Torch, Cupy, Jax, Other };

Framework framework_of(nb::handle obj);

/// |module|.|name| (e.g. torch._C's _from_dlpack), or an invalid object when the module lacks
/// it. Hot paths keep the result in a never-destroyed static: Python is gone by the time static
/// objects are destroyed.
nb::object attr_or_invalid(const char* module, const char* name);

/// kjit._torch's bridge once it has loaded: torch is imported, kjit._torch was built for this
/// very torch, and KJIT_TORCH_BRIDGE is not 0. nullptr otherwise. Looked for when the first torch
/// tensor is seen (kjit never imports torch itself).
const TorchBridge* torch_bridge();

/// How torch tensors are read and made in this process, and why when not through kjit._torch
/// (for `python -m kjit doctor`). Looks for the bridge as torch_bridge() does.
std::string torch_path();

/// A dtype from a kjit.Dtype, a string, a NumPy dtype or type, or a torch dtype.
Dtype to_dtype(nb::handle obj, const Param& param);

/// True when |obj| cannot change its value: an exact int, bool, float or str, a dtype object
/// to_dtype has seen (those are singletons), or a tuple of such.
bool is_immutable(nb::handle obj);

/// True for Python bool, int and float objects (kernel scalars).
bool is_python_scalar(nb::handle obj);

/// A kernel input (or, when |writable|, an output) from a Python scalar, a kjit.Array or any
/// DLPack/buffer-protocol array. The result borrows the object's memory, keeping what DLPack or
/// the buffer protocol exported; a torch tensor read directly is kept only with |keep_alive|
/// (a call's own arguments live through the call). A JAX array on a GPU is asked, through the
/// DLPack stream protocol, to be ready for work queued on |dlpack_stream| (DLPack's numbering: 1 is
/// the legacy default stream) when that is not 0.
Array to_array(nb::handle obj, const Param& param, bool keep_alive, bool writable = false,
               uintptr_t dlpack_stream = 0);

/// An Array as an object of |framework| (zero-copy); kjit.Array for None/Kjit/Other.
nb::object from_array(const Array& array, Framework framework);
/// A kernel's outputs as a list of |framework|'s objects.
nb::list list_of(const std::vector<Array>& arrays, Framework framework);

/// An object exporting |array| through __dlpack__ / __dlpack_device__ (zero-copy).
nb::object dlpack_view(const Array& array);

/// A Python int or an object with __index__ (not a bool).
int64_t to_int(nb::handle obj, const Param& param);

/// str(obj), as Python spells it.
std::string str_of(nb::handle obj);
/// A Python error as Python prints its last line ("ValueError: what went wrong").
std::string error_text(nb::python_error& e);

/// The UTF-8 text of the str |obj|; a ValueError naming |param| for one that has none (a lone
/// surrogate).
std::string utf8_of(nb::handle obj, const Param& param);

/// True for list and tuple objects: the only containers taken for inputs= and outputs=.
bool is_list(nb::handle obj);

/// The items of a list or tuple, each held while this lives: converting an item may run Python
/// code that changes the list, and a call uses its arrays while other threads run. A few are
/// held in place, as a call's arguments are.
class HeldItems {
 public:
  explicit HeldItems(nb::handle list);
  HeldItems(PyObject* const* items, size_t n);
  ~HeldItems();
  HeldItems(const HeldItems&) = delete;
  HeldItems& operator=(const HeldItems&) = delete;

  size_t size() const { return size_; }
  nb::handle operator[](size_t i) const { return items_[i]; }
  /// A new list of the items.
  nb::list list() const;

 private:
  static constexpr size_t kInPlace = 8;
  PyObject* in_place_[kInPlace];
  std::vector<PyObject*> on_heap_;
  PyObject** items_ = in_place_;
  size_t size_ = 0;
};

/// A new list of |n| items.
nb::list list_of(PyObject* const* items, size_t n);

/// The memory kjit._torch read into |view|, as an Array; |owner| (may be empty) is kept with it.
Array from_torch_view(const TorchTensorView& view, std::shared_ptr<void> owner = {});
/// The same memory as a launch reads it, valid while |view| is.
ArrayRef ref_of(const TorchTensorView& view);

/// The library a call's outputs belong to: that of its first array input. Scalars, Python's or
/// NumPy's (np.float32(2)), decide only when no input is an array.
Framework outputs_framework(const HeldItems& inputs);

/// A sequence of exactly three non-negative ints.
Dim3 to_dim3(nb::handle obj, const Param& param);

/// A shape: a sequence of non-negative ints.
Shape to_shape(nb::handle obj, const Param& param);

}  // namespace kjit::python
