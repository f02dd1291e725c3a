// kjit.Array, kjit.Dtype and the array helpers (array, empty, zeros, devices...).
#include <kjit/kjit.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "arguments.h"
#include "convert.h"
#include "core/dtype_cast.h"
#include "frameworks/adapter.h"
#include "frameworks/dlpack.h"
#include "frameworks/numpy.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kjit::python {
namespace {

Device to_device(nb::handle obj, const char* param) {
  if (obj.is_none()) return default_device();
  if (!nb::isinstance<nb::str>(obj)) {
    throw TypeError(std::string(param) + ": expected 'cpu', 'cuda' or 'cuda:N'");
  }
  return Device::parse(utf8_of(obj, param), param);
}

// kjit.array's arguments.
const ArgumentSignature<3>& array_signature() {
  static const auto& signature = *new ArgumentSignature<3>(
      "array",
      {{{"obj", "object"}, {"device", "str | None", Py_None}, {"dtype", "object | None", Py_None}}},
      3, "Array");
  return signature;
}

// The arguments of kjit.empty and kjit.zeros (|name|), made once each.
const ArgumentSignature<3>& new_array_signature(std::string_view name) {
  auto make = [](const char* qualname) {
    return new ArgumentSignature<3>(
        qualname,
        {{{"shape", "collections.abc.Sequence[int]"},
          {"dtype", "object", nb::cast(Dtype::Float32).release().ptr(), "float32"},
          {"device", "str | None", Py_None}}},
        3, "Array");
  };
  static const auto& empty = *make("empty");
  static const auto& zeros = *make("zeros");
  return name == "empty" ? empty : zeros;
}

nb::tuple shape_tuple(const Array& a) {
  nb::list l;
  for (int64_t d : a.shape()) l.append(d);
  return nb::tuple(l);
}

}  // namespace

void init_array(nb::module_& m) {
  nb::enum_<Dtype> dtype(
      m, "Dtype",
      "Element types of arrays and kernel parameters. Each is also kjit.<name> (kjit.float32, "
      "kjit.bool_ for bool); wherever a dtype goes, NumPy's, torch's, JAX's and MLX's dtypes "
      "and names ('float16') are taken too.\n\n"
      "Example::\n\n"
      "    kjit.empty((4,), dtype=kjit.float16)\n"
      "    kernel(..., output_dtypes=[kjit.int32], template=[('T', kjit.float32)])");
  for (int i = 0; i < kNumDtypes; ++i) {
    Dtype d = static_cast<Dtype>(i);
    std::string name(dtype_name(d));
    dtype.value(name.c_str(), d);
    if (name != "bool") m.attr(name.c_str()) = nb::cast(d);  // kjit.bool_ is set in Python
  }
  dtype.def_prop_ro("itemsize", [](Dtype d) { return itemsize(d); });
  dtype.def_prop_ro("name", [](Dtype d) { return std::string(dtype_name(d)); });
  dtype.def("__str__", [](Dtype d) { return std::string(dtype_name(d)); });
  dtype.def("__repr__", [](Dtype d) { return "kjit." + std::string(dtype_name(d)); });

  nb::class_<Array>(
      m, "Array",
      "An n-dimensional array on a device, owning or borrowing memory.\n\n"
      "Made by kjit.array (a view of another library's array), kjit.empty or kjit.zeros, and\n"
      "returned by kernel calls given kjit.Array inputs. Read it with numpy() or np.asarray\n"
      "(CPU arrays), pass it to any DLPack consumer (torch.from_dlpack, jax.dlpack), or move it\n"
      "with to(device).\n\n"
      "Attributes: shape and strides (tuples of ints; strides in elements), dtype (a\n"
      "kjit.Dtype), ndim, size (elements), nbytes, device ('cpu' or 'cuda:N').\n\n"
      "Example:\n"
      "    >>> a = kjit.zeros((2, 3), kjit.float32)\n"
      "    >>> a.shape, a.dtype, a.device\n"
      "    ((2, 3), kjit.float32, 'cpu')")
      .def_prop_ro("shape", &shape_tuple,
                   nb::for_getter(nb::sig("def shape(self, /) -> tuple[int, ...]")))
      .def_prop_ro(
          "strides",
          [](const Array& a) {
            nb::list l;
            for (int64_t s : a.strides()) l.append(s);
            return nb::tuple(l);
          },
          nb::for_getter(nb::sig("def strides(self, /) -> tuple[int, ...]")),
          nb::for_getter("Strides in elements."))
      .def_prop_ro("dtype", &Array::dtype)
      .def_prop_ro("ndim", &Array::ndim)
      .def_prop_ro("size", &Array::size)
      .def_prop_ro("nbytes", &Array::nbytes)
      .def_prop_ro("device", [](const Array& a) { return a.device().str(); })
      .def(
          "numpy", [](const Array& a) { return to_numpy(a); },
          "A NumPy view of the array (CPU arrays only).")
      .def(
          "__array__",
          [](const Array& a, nb::handle dtype, nb::handle copy) {
            // NumPy's protocol: copy=True always copies, copy=False never does (and raises
            // when it would have to), None copies only when it must.
            nb::object view = to_numpy(a);
            nb::object arr = view;
            if (!dtype.is_none()) arr = arr.attr("astype")(dtype, "copy"_a = false);
            if (!copy.is_none() && !PyObject_IsTrue(copy.ptr()) && !arr.is(view)) {
              throw ValueError("__array__: dtype " + nb::cast<std::string>(nb::str(dtype)) +
                               " needs a copy, which copy=False forbids");
            }
            if (!copy.is_none() && PyObject_IsTrue(copy.ptr()) && arr.is(view)) {
              arr = arr.attr("copy")();
            }
            return arr;
          },
          "dtype"_a = nb::none(), "copy"_a = nb::none())
      .def(
          "__dlpack__",
          [](const Array& a, nb::kwargs kwargs) {
            return dlpack_view(a).attr("__dlpack__")(**kwargs);
          },
          nb::sig("def __dlpack__(self, **kwargs: object) -> object"))
      .def(
          "__dlpack_device__",
          [](const Array& a) {
            return nb::make_tuple(a.device().type == DeviceType::CPU ? 1 : 2, a.device().index);
          },
          nb::sig("def __dlpack_device__(self) -> tuple[int, int]"))
      .def(
          "to", [](const Array& a, nb::handle device) { return a.to(to_device(device, "device")); },
          "device"_a.none(), "The array on another device (itself when already there).")
      .def("__repr__", [](const Array& a) {
        std::string s = "kjit.Array(shape=(";
        for (int i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
        if (a.ndim() == 1) s += ",";
        return s + "), dtype=" + std::string(dtype_name(a.dtype())) +
               ", device=" + a.device().str() + ")";
      });

  m.def(
      "array",
      [](nb::args args, nb::kwargs kwargs) {
        const auto [obj, device, dtype] = array_signature().place(args, kwargs);
        Array a = to_array(obj, {.param = "obj", .keep_alive = true});
        std::optional<Device> target;
        if (device != Py_None) target = to_device(device, "device");
        if (dtype != Py_None) {
          // Conversions run on the host: a result wanted there is moved first.
          if (target && target->type == DeviceType::CPU) a = a.to(*target);
          a = cast(a, to_dtype(dtype, "dtype"), "dtype");
        }
        return target ? a.to(*target) : a;
      },
      nb::sig(array_signature().python()),
      "A kjit.Array viewing obj's memory, or a new one converted from it.\n\n"
      "Parameters:\n"
      "    obj: a NumPy array, any DLPack producer (torch, JAX, CuPy, MLX arrays) or a Python\n"
      "        scalar. Its memory is shared, not copied, and kept alive by the result.\n"
      "    device (str | None, default None): 'cpu', 'cuda' or 'cuda:N'; the array is copied\n"
      "        there when it lives elsewhere. None keeps obj's device.\n"
      "    dtype (default None): a kjit dtype, NumPy dtype or name ('float16'...); a new array\n"
      "        converted as NumPy's astype converts. None keeps obj's dtype.\n\n"
      "Raises TypeError for an object that is no array (or of a dtype kjit does not know,\n"
      "such as datetime64), ValueError for an unknown device.\n\n"
      "Example:\n"
      "    >>> a = kjit.array(np.arange(4, dtype=np.float32))\n"
      "    >>> kjit.array(a, dtype='float16').dtype\n"
      "    kjit.float16");
  // kjit.empty and kjit.zeros: a new row-contiguous array from make (Array::empty or zeros).
  auto def_new_array = [&m](const char* name, Array (*make)(const Shape&, Dtype, Device),
                            const char* doc) {
    const ArgumentSignature<3>& signature = new_array_signature(name);
    m.def(
        name,
        [signature = &signature, make](nb::args args, nb::kwargs kwargs) {
          const auto [shape, dtype, device] = signature->place(args, kwargs);
          return make(to_shape(shape, "shape"), to_dtype(dtype, "dtype"),
                      to_device(device, "device"));
        },
        nb::sig(signature.python()), doc);
  };
  // Their docstrings differ in what the elements are, and in the example.
  static const auto new_array_doc = [](const std::string& what, const std::string& example) {
    return "A new row-contiguous array " + what +
           ".\n\n"
           "Parameters:\n"
           "    shape (sequence of ints): the extent of each dimension, each >= 0.\n"
           "    dtype (default kjit.float32): a kjit dtype, NumPy dtype or name.\n"
           "    device (str | None, default None): 'cpu', 'cuda' or 'cuda:N'; None is\n"
           "        kjit.default_device().\n\n"
           "Raises ValueError for a negative extent or an unknown device, TypeError for\n"
           "a shape that is no sequence of ints.\n\n"
           "Example:\n" +
           example;
  };
  static const std::string empty_doc =
      new_array_doc("whose elements are not set",
                    "    >>> kjit.empty((4,), 'int32', device='cpu').shape\n    (4,)");
  static const std::string zeros_doc = new_array_doc(
      "of zeros", "    >>> kjit.zeros((2, 2), device='cpu').numpy().sum()\n    np.float32(0.0)");
  def_new_array("empty", &Array::empty, empty_doc.c_str());
  def_new_array("zeros", &Array::zeros, zeros_doc.c_str());
  m.def(
      "devices",
      [] {
        std::vector<std::string> out;
        for (const Device& d : devices()) out.push_back(d.str());
        return out;
      },
      "The devices that can run kernels now: 'cpu' first, then 'cuda:0', 'cuda:1'... for each\n"
      "GPU whose driver works (`python -m kjit doctor` says why one does not).\n\n"
      "Example:\n"
      "    >>> kjit.devices()[0]\n"
      "    'cpu'");
  m.def(
      "default_device", [] { return default_device().str(); },
      "The device kernels and new arrays use when none is named: 'cuda:0' when a GPU works,\n"
      "else 'cpu'.\n\n"
      "Example:\n"
      "    >>> kjit.default_device() in kjit.devices()\n"
      "    True");
}

}  // namespace kjit::python
