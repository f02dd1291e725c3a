// kjit.metal_kernel / kjit.cuda_kernel and the kernel object's __call__: the whole call is
// decoded in C++ so that a cached launch does no per-argument Python work.
#include <kjit/kjit.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <memory>

#include "arguments.h"
#include "bound_kernel_object.h"
#include "call_memo.h"
#include "call_place.h"
#include "convert.h"
#include "core/backend.h"
#include "core/precompiled.h"
#include "errors_binding.h"
#include "frameworks/adapter.h"
#include "recorded_call.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kjit::python {
namespace {

PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames);
PyObject* bound_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);

// The Python kernel object: a kernel and what its calls remember. Its first member is the
// instance's vectorcall slot (see as_python).
struct PyKernel {
  PyKernel(Kernel k, nb::tuple r) : kernel(std::move(k)), recipe(std::move(r)) {}
  vectorcallfunc vectorcall = kernel_vectorcall;
  Kernel kernel;
  CallMemo memo;
  // Shared with the kernel's bound kernels, which may outlive this object.
  std::shared_ptr<GradWarning> grad_warning = std::make_shared<GradWarning>();
  // (factory name, its arguments): what pickling makes the kernel again from, in plain Python
  // values made from the checked arguments (none of the caller's objects).
  nb::tuple recipe;
};

// The plain Python value of each checked argument, for recipes.
nb::list names_of(const std::vector<std::string>& names) {
  nb::list out;
  for (const std::string& n : names) out.append(nb::str(n.c_str(), n.size()));
  return out;
}

nb::dict options_of(const CompileOptions& options) {
  nb::dict out;
  out["math_mode"] = options.math_mode == MathMode::Safe      ? "safe"
                     : options.math_mode == MathMode::Relaxed ? "relaxed"
                                                              : "fast";
  out["debug"] = options.debug;
  out["line_info"] = options.line_info;
  return out;
}

nb::str dtype_text(Dtype d) {
  const std::string_view name = dtype_name(d);
  return nb::str(name.data(), name.size());
}

// A new Python object of a type whose C++ object starts with its vectorcall slot. nanobind
// keeps the C++ object inside the Python object at an offset that is the same for every
// instance of the type; the type learns it from the first instance, and from then on calls its
// instances through that slot.
template <class T>
nb::object as_python(T value) {
  nb::object obj = nb::cast(std::move(value));
  auto* type = reinterpret_cast<PyTypeObject*>(obj.type().ptr());
  const Py_ssize_t offset = reinterpret_cast<char*>(&nb::inst_ptr<T>(obj)->vectorcall) -
                            reinterpret_cast<char*>(obj.ptr());
  if (type->tp_vectorcall_offset == 0) {
    type->tp_vectorcall_offset = offset;
    type->tp_call = PyVectorcall_Call;
    type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    PyType_Modified(type);
  } else if (type->tp_vectorcall_offset != offset) {
    throw std::runtime_error("kjit: an instance laid out unlike the others of its type");
  }
  return obj;
}

std::vector<std::string> to_names(nb::handle obj, const char* api, const char* param) {
  std::string p = std::string("[kjit.") + api + "] " + param;
  if (!is_list(obj)) throw TypeError(p + ": expected a list of names (str)");
  const HeldItems items(obj);
  std::vector<std::string> names;
  names.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (!nb::isinstance<nb::str>(items[i])) throw TypeError(p + ": every name must be a str");
    names.push_back(utf8_of(items[i], p));
  }
  return names;
}

std::string to_text(nb::handle obj, const char* api, const char* param) {
  if (!nb::isinstance<nb::str>(obj)) {
    throw TypeError(std::string("[kjit.") + api + "] " + param + ": expected a str");
  }
  return utf8_of(obj, std::string("[kjit.") + api + "] " + param);
}

CompileOptions to_compile_options(nb::handle obj, const char* api) {
  std::string p = std::string("[kjit.") + api + "] compile_options";
  CompileOptions options;
  if (obj.is_none()) return options;
  if (!nb::isinstance<nb::dict>(obj)) throw TypeError(p + ": expected a dict or None");
  // The pairs are copied first: a key's __repr__ may change the dict.
  const nb::list pairs = nb::steal<nb::list>(PyDict_Items(obj.ptr()));
  if (!pairs.is_valid()) throw nb::python_error();
  for (nb::handle pair : pairs) {
    const nb::handle key = PyTuple_GET_ITEM(pair.ptr(), 0), value = PyTuple_GET_ITEM(pair.ptr(), 1);
    auto is = [&](const char* name) {
      return PyUnicode_Check(key.ptr()) && PyUnicode_CompareWithASCIIString(key.ptr(), name) == 0;
    };
    bool* flag = is("debug") ? &options.debug : is("line_info") ? &options.line_info : nullptr;
    if (flag) {
      if (!PyBool_Check(value.ptr())) {
        throw TypeError(p + "[" + nb::cast<std::string>(nb::repr(key)) + "]: expected a bool");
      }
      *flag = value.ptr() == Py_True;
      continue;
    }
    if (!is("math_mode")) {
      throw ValueError(p + ": unknown option " + nb::cast<std::string>(nb::repr(key)) +
                       " (known: 'math_mode', 'debug', 'line_info')");
    }
    std::string v = nb::isinstance<nb::str>(value) ? utf8_of(value, p + "['math_mode']") : "";
    if (v == "safe")
      options.math_mode = MathMode::Safe;
    else if (v == "relaxed")
      options.math_mode = MathMode::Relaxed;
    else if (v == "fast")
      options.math_mode = MathMode::Fast;
    else
      throw ValueError(p + ": math_mode must be 'safe', 'relaxed' or 'fast'");
  }
  return options;
}

// Dynamic shared memory in bytes: an int in [0, 2^31).
int to_shared_memory(nb::handle obj, const Param& param) {
  if (PyBool_Check(obj.ptr()) || !PyLong_Check(obj.ptr())) {
    throw TypeError(param.str() + ": expected an int (bytes)");
  }
  int overflow = 0;
  long long bytes = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (overflow) bytes = -1;
  if (bytes < 0 || bytes > INT32_MAX) {
    throw ValueError(param.str() + ": must be in [0, 2^31) bytes, got " +
                     nb::cast<std::string>(nb::repr(obj)));
  }
  return static_cast<int>(bytes);
}

bool to_bool(nb::handle obj, const char* api, const char* param) {
  if (!PyBool_Check(obj.ptr())) {
    throw TypeError(std::string("[kjit.") + api + "] " + param + ": expected a bool");
  }
  return obj.ptr() == Py_True;
}

// The dtype of an array library's scalar (np.float32(1), np.int64(2), np.True_, a 0-d tensor),
// or nothing for any other object.
std::optional<Dtype> scalar_dtype(nb::handle obj) {
  if (PyType_Check(obj.ptr()) || !PyNumber_Check(obj.ptr()) || !nb::hasattr(obj, "dtype")) {
    return std::nullopt;
  }
  try {
    if (nb::hasattr(obj, "ndim") && to_int(obj.attr("ndim"), "ndim") != 0) return std::nullopt;
    return to_dtype(obj.attr("dtype"), "dtype");
  } catch (const std::exception&) {
    PyErr_Clear();
    return std::nullopt;
  }
}

TemplateArgs to_template_args(const Param& p, nb::handle obj) {
  TemplateArgs args;
  if (obj.is_none()) return args;
  if (!is_list(obj)) throw TypeError(p.str() + ": expected a list of (name, value) pairs");
  const HeldItems items(obj);
  args.reserve(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    nb::handle item_list = items[k];
    if (!is_list(item_list) || PySequence_Fast_GET_SIZE(item_list.ptr()) != 2) {
      throw TypeError(p.str() + ": expected (name, value) pairs, got " +
                      nb::cast<std::string>(nb::repr(item_list)));
    }
    const HeldItems item(item_list);
    nb::handle name = item[0];
    nb::handle value = item[1];
    if (!nb::isinstance<nb::str>(name)) {
      throw TypeError(p.str() + ": a template name must be a str");
    }
    const std::string n = utf8_of(name, p);
    auto what = [&] { return p.str() + ": the value of '" + n + "'"; };
    // Python's bools and ints, and an array library's (np.True_, np.int64(2)).
    const bool python_number = PyLong_Check(value.ptr());  // bools too
    const std::optional<Dtype> scalar = python_number ? std::nullopt : scalar_dtype(value);
    if (PyBool_Check(value.ptr()) || scalar == Dtype::Bool) {
      args.emplace_back(std::move(n), PyObject_IsTrue(value.ptr()) == 1);
    } else if (python_number || (scalar && is_integral(*scalar))) {
      int overflow = 0;
      nb::object index = nb::steal(PyNumber_Index(value.ptr()));
      if (!index.is_valid()) throw nb::python_error();
      long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
      if (overflow || v < INT32_MIN || v > INT32_MAX) {
        throw ValueError(what() + " does not fit in a 32-bit int");
      }
      args.emplace_back(std::move(n), static_cast<int>(v));
    } else {
      const std::string label = what();  // only a dtype needs it, and only on failure
      const Param where(label);
      try {
        Dtype d = to_dtype(value, where);
        args.emplace_back(std::move(n), d);
      } catch (const TypeError&) {
        if (nb::isinstance<nb::str>(value)) throw;  // a name: the dtype error says it best
        throw TypeError(label + " must be a dtype, an int or a bool, got '" +
                        nb::cast<std::string>(value.type().attr("__name__")) + "'");
      }
    }
  }
  return args;
}

// A Python int or float, or a real scalar of an array library.
bool is_real_number(nb::handle obj) {
  if (PyFloat_Check(obj.ptr()) || PyLong_Check(obj.ptr())) return true;
  const std::optional<Dtype> d = scalar_dtype(obj);
  return d && (is_floating(*d) || is_integral(*d) || *d == Dtype::Bool);
}

// A list or tuple, else a TypeError naming |param|.
void check_list(nb::handle obj, const Param& param) {
  if (!is_list(obj)) {
    throw TypeError(param.str() + ": expected a list, got " +
                    nb::cast<std::string>(obj.type().attr("__name__")));
  }
}

// Items converted one by one; |param| names each on errors.
template <class F>
std::vector<std::invoke_result_t<F, nb::handle, const Param&>> convert_items(const HeldItems& items,
                                                                             const Param& param,
                                                                             F convert) {
  std::vector<std::invoke_result_t<F, nb::handle, const Param&>> out;
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) out.push_back(convert(items[i], param.at(i)));
  return out;
}

// A list or tuple converted element by element.
template <class F>
std::vector<std::invoke_result_t<F, nb::handle, const Param&>> to_list(nb::handle obj,
                                                                       const Param& param,
                                                                       F convert) {
  check_list(obj, param);
  return convert_items(HeldItems(obj), param, convert);
}

CallPlace to_call_place(const Param& t, nb::handle stream, nb::handle device, nb::handle verbose) {
  CallPlace place;
  if (!PyBool_Check(verbose.ptr())) throw TypeError((t / "verbose").str() + ": expected a bool");
  place.verbose = verbose.ptr() == Py_True;
  // A library's stream object may name a device rather than a CUDA stream (MLX's mx.cpu).
  std::optional<Device> stream_device;
  if (!stream.is_none()) {
    stream_device = device_of_stream(stream, t / "stream");
    if (!stream_device) place.stream = to_stream(stream, t / "stream");
  }
  if (!device.is_none()) {
    if (!nb::isinstance<nb::str>(device)) {
      throw TypeError((t / "device").str() + ": expected 'cpu', 'cuda' or 'cuda:N'");
    }
    place.device = Device::parse(utf8_of(device, t / "device"), (t / "device").str());
  }
  if (stream_device) {
    if (place.device && *place.device != *stream_device) {
      throw ValueError((t / "stream").str() + ": " + str_of(stream) + " names device '" +
                       stream_device->str() + "', and device= asks for '" + place.device->str() +
                       "'; give one of them");
    }
    place.device = stream_device;
  }
  return place;
}

std::optional<double> to_init_value(const Param& t, nb::handle init_value) {
  if (init_value.is_none()) return std::nullopt;
  if (!is_real_number(init_value)) {
    throw TypeError((t / "init_value").str() + ": expected a real number or None, got '" +
                    nb::cast<std::string>(init_value.type().attr("__name__")) + "'");
  }
  double v = PyFloat_AsDouble(init_value.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw ValueError((t / "init_value").str() + ": " +
                     nb::cast<std::string>(nb::repr(init_value)).substr(0, 40) +
                     " is out of range");
  }
  // The fill takes a double: an integer it would round (2**53 + 1) is refused, not changed.
  if (!PyFloat_Check(init_value.ptr()) && PyIndex_Check(init_value.ptr())) {
    const nb::object exact = nb::steal(PyNumber_Index(init_value.ptr()));
    if (!exact.is_valid()) throw nb::python_error();
    if (!exact.equal(nb::float_(v))) {
      throw ValueError((t / "init_value").str() + ": " +
                       nb::cast<std::string>(nb::repr(exact)).substr(0, 40) +
                       " is not exactly a double, which init_value is filled from");
    }
  }
  return v;
}

// One run of kernel |k| from Python on |inputs|, writing |outputs| when given: the arrays read
// (an input whose gradient is lost issuing |grad_warning|), the work ordered after what the
// inputs' framework has queued (unless a stream is given), and the outputs returned as the
// arrays of |library| (outputs_framework of |inputs|). |run| launches (without the GIL).
template <class Run>
nb::object run_from_python(const Kernel& k, GradWarning& grad_warning, const HeldItems& inputs,
                           const HeldItems* outputs, const FrameworkAdapter& library,
                           const CallPlace& place, Run run) {
  const Param t = Param::of_kernel(k);
  const Param input_param = t / "inputs";
  LaunchOptions options;
  options.stream = place.stream.value_or(0);
  options.device = place.device;
  const size_t n_in = inputs.size();
  // The kernel's stream, when it is known before the inputs are read (DLPack's numbering, 1:
  // the legacy stream): the one given, or the legacy stream of a library whose work runs there.
  // Libraries that can export their arrays ready for work on it do (JAX); otherwise (0) their
  // export waits until the arrays are ready.
  const uintptr_t dlpack_stream = place.stream ? (*place.stream ? *place.stream : 1)
                                  : library.queues_on_legacy_stream ? 1
                                                                    : 0;
  std::vector<Array> arrays;
  arrays.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    const std::string* name = i < k.input_names().size() ? &k.input_names()[i] : nullptr;
    arrays.push_back(to_array(inputs[i], {.param = input_param.at(i, name),
                                          .dlpack_stream = dlpack_stream,
                                          .grad_warning = &grad_warning}));
  }
  if (outputs) {
    options.outputs = convert_items(*outputs, t / "outputs", [](nb::handle o, const Param& p) {
      return to_array(o, {.param = p, .writable = true});
    });
  }
  if (place.verbose) {
    options.print = [](std::string_view text) {
      nb::gil_scoped_acquire gil;
      // Where print() would write: nowhere when sys.stdout is None (pythonw, a closed console).
      const nb::object out = nb::module_::import_("sys").attr("stdout");
      if (!out.is_none()) out.attr("write")(nb::str(text.data(), text.size()));
    };
  }
  // With arrays on a GPU, work (a kernel, or a copy of a 0-d input to a CPU kernel) runs on the
  // stream of the inputs' library unless told otherwise.
  std::optional<Device> gpu;
  if (options.device && options.device->type == DeviceType::CUDA) gpu = options.device;
  for (const Array& a : arrays) {
    if (!gpu && a.device().type == DeviceType::CUDA) gpu = a.device();
  }
  if (gpu && !place.stream && library.current_stream) {
    options.stream = library.current_stream(gpu->index);
  }
  const std::vector<Array> result = run_without_gil([&] {
    std::vector<Array> made = run(arrays, options);
    if (gpu && library.after_launch == AfterLaunch::Synchronize) {
      backend_for(DeviceType::CUDA).synchronize(gpu->index, options.stream);
    }
    return made;
  });
  if (outputs) return outputs->list();
  return list_of(result, library);
}

// A keyword call whose settings are its kernel's last keyword call's, run as a bound call runs
// on the recorded path (its arrays read straight from their library); nothing, having done
// nothing, when it cannot be. |library| is the one whose arrays the call returns.
std::optional<nb::object> run_keyword_as_recorded(const Kernel& k, const GradWarning& grad_warning,
                                                  const CallSettings& settings,
                                                  const CallPlace& place, const HeldItems& inputs,
                                                  const HeldItems* outputs,
                                                  const FrameworkAdapter& library) {
  const size_t n_in = k.input_names().size(), n_out = k.output_names().size();
  if (inputs.size() != n_in || (outputs && outputs->size() != n_out) ||
      n_in + n_out > kMaxRecordedArrays || n_in == 0) {
    return std::nullopt;  // the general path says what is wrong
  }
  if (!library.call_recorded) return std::nullopt;
  PyObject* args[kMaxRecordedArrays];
  for (size_t i = 0; i < n_in; ++i) args[i] = inputs[i].ptr();
  for (size_t o = 0; outputs && o < n_out; ++o) args[n_in + o] = (*outputs)[o].ptr();
  // Shared with this call while it runs without the GIL, whatever other calls do.
  const std::shared_ptr<const CallRecord> record = CallRecord::of_keyword_call(k, settings);
  if (!record) return std::nullopt;
  const size_t n = n_in + (outputs ? n_out : 0);
  const BoundCall call{*record, place, n_in, n_out, args, n, grad_warning};
  if (!may_run_as_recorded(call)) return std::nullopt;
  return library.call_recorded(call);
}

// Whether any of |settings| is a function (a list, a tuple or None never is). A type is not:
// output_dtypes=np.float32 is a slip for [np.float32], which the conversion reports as such.
bool any_callable(std::initializer_list<nb::handle> settings) {
  for (nb::handle s : settings) {
    if (PyCallable_Check(s.ptr()) && !PyType_Check(s.ptr())) return true;
  }
  return false;
}

nb::object call(PyKernel& py, nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes,
                nb::handle grid, nb::handle threadgroup, nb::handle template_args,
                nb::handle init_value, nb::handle verbose, nb::handle stream, nb::handle device,
                nb::handle outputs) {
  const Kernel& k = py.kernel;
  CallMemo& memo = py.memo;
  const Param t = Param::of_kernel(k);
  if (!is_list(inputs)) {
    // MLX 0.17's form, arrays and shapes keyed by name: turned into this form's lists in
    // Python, off the path of the calls made with lists.
    const bool dict_inputs = PyDict_Check(inputs.ptr());
    if (dict_inputs && PyDict_Check(output_shapes.ptr())) {
      return nb::module_::import_("kjit._earlier_api")
          .attr("call_with_dicts")(nb::find(py), t.str(), inputs, output_shapes, output_dtypes,
                                   grid, threadgroup, template_args, init_value, verbose, stream,
                                   device, outputs);
    }
    throw TypeError((t / "inputs").str() +
                    ": expected a list of arrays or scalars (wrap a single array: inputs=[x]), "
                    "got " +
                    nb::cast<std::string>(inputs.type().attr("__name__")) +
                    (dict_inputs ? " (a call with dicts, MLX 0.17's form, passes output_shapes, "
                                   "output_dtypes and outputs as dicts too)"
                                 : ""));
  }
  if (any_callable({output_shapes, output_dtypes, grid, threadgroup, template_args})) {
    // Settings that are functions of the inputs: evaluated in Python, once per signature, then
    // called with their values.
    return nb::module_::import_("kjit._shape_functions")
        .attr("call_with_functions")(nb::find(py), t.str(), inputs, output_shapes, output_dtypes,
                                     grid, threadgroup, template_args, init_value, verbose, stream,
                                     device, outputs);
  }
  const CallPlace place = to_call_place(t, stream, device, verbose);
  const HeldItems input_items(inputs);  // the arrays, held through the call
  // Shared with the memo: kept while the kernel runs without the GIL.
  const auto shapes = memo.output_shapes.get(
      output_shapes, [&](nb::handle o) { return to_list(o, t / "output_shapes", to_shape); });
  const auto dtypes = memo.output_dtypes.get(
      output_dtypes, [&](nb::handle o) { return to_list(o, t / "output_dtypes", to_dtype); });
  const auto g = memo.grid.get(grid, [&](nb::handle o) { return to_dim3(o, t / "grid"); });
  const auto tg = memo.threadgroup.get(threadgroup,
                                       [&](nb::handle o) { return to_dim3(o, t / "threadgroup"); });
  const auto targs = memo.template_args.get(
      template_args, [&](nb::handle o) { return to_template_args(t / "template", o); });
  const std::optional<double> init = to_init_value(t, init_value);
  std::optional<HeldItems> output_items;  // the given outputs, held through the call
  if (!outputs.is_none()) {
    check_list(outputs, t / "outputs");
    output_items.emplace(outputs);
  }
  const CallSettings settings{*shapes, *dtypes, *g, *tg, *targs, init, place.verbose};
  const FrameworkAdapter& library = outputs_framework(input_items);
  if (std::optional<nb::object> out =
          run_keyword_as_recorded(k, *py.grad_warning, settings, place, input_items,
                                  output_items ? &*output_items : nullptr, library)) {
    return *std::move(out);
  }
  return run_from_python(
      k, *py.grad_warning, input_items, output_items ? &*output_items : nullptr, library, place,
      [&](const std::vector<Array>& arrays, const LaunchOptions& options) {
        return k(arrays, *shapes, *dtypes, *g, *tg, *targs, init, place.verbose, options);
      });
}

// A bound kernel's Python object (Kernel.bind): calls pass the arrays alone. It keeps the
// stream object it was given, whose handle its calls use (a CuPy stream destroys its handle
// when it goes).
struct PyBoundKernel {
  PyBoundKernel(BoundKernel b, CallPlace p, nb::object stream, std::shared_ptr<GradWarning> warning,
                nb::object r)
      : n_inputs(b.kernel().input_names().size()),
        n_outputs(b.kernel().output_names().size()),
        bound(std::move(b)),
        place(std::move(p)),
        stream_object(std::move(stream)),
        grad_warning(std::move(warning)),
        recipe(std::move(r)) {}
  vectorcallfunc vectorcall = bound_vectorcall;
  // The kernel's counts of inputs and outputs, which a call reads first, on the object's first
  // cache line.
  size_t n_inputs, n_outputs;
  BoundKernel bound;
  CallPlace place;
  nb::object stream_object;
  std::shared_ptr<GradWarning> grad_warning;  // its kernel's
  // (its kernel's recipe, bind's arguments) in plain Python values, for pickling; None when
  // bound to a stream object, which belongs to this process.
  nb::object recipe;
};

// A bound call's arguments: the inputs, then optionally the outputs to write.
nb::object call_bound(const PyBoundKernel& py, PyObject* const* args, size_t n) {
  const BoundCall recorded{CallRecord::of(py.bound), py.place, py.n_inputs, py.n_outputs, args, n,
                           *py.grad_warning};
  if (may_run_as_recorded(recorded)) {
    const FrameworkAdapter& library = framework_of(args[0]);
    if (library.call_recorded) {
      if (std::optional<nb::object> out = library.call_recorded(recorded)) return *std::move(out);
    }
  }
  const Kernel& k = py.bound.kernel();
  const size_t n_in = py.n_inputs, n_out = py.n_outputs;
  if (n != n_in && n != n_in + n_out) {
    auto names = [](const std::vector<std::string>& v) {
      std::string out;
      for (const std::string& name : v) out += (out.empty() ? "" : ", ") + name;
      return out;
    };
    throw TypeError(Param::of_kernel(k).str() + "a bound call takes its " + std::to_string(n_in) +
                    " input(s) (" + names(k.input_names()) + "), then " + "optionally its " +
                    std::to_string(n_out) + " output(s) (" + names(k.output_names()) +
                    "), as positional arguments; got " + std::to_string(n));
  }
  const HeldItems inputs(args, n_in);
  std::optional<HeldItems> outputs;
  if (n > n_in) outputs.emplace(args + n_in, n_out);
  return run_from_python(k, *py.grad_warning, inputs, outputs ? &*outputs : nullptr,
                         outputs_framework(inputs), py.place,
                         [&](const std::vector<Array>& arrays, const LaunchOptions& options) {
                           return py.bound(arrays, options);
                         });
}

constexpr char kBoundKeywords[] =
    "kjit.BoundKernel.__call__() takes positional arguments only: the inputs, then optionally "
    "the outputs";

PyObject* bound_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  if (kwnames && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_SetString(PyExc_TypeError, kBoundKeywords);
    return nullptr;
  }
  try {
    return call_bound(*nb::inst_ptr<PyBoundKernel>(self), args, PyVectorcall_NARGS(nargsf))
        .release()
        .ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

// The types arguments of several functions share.
constexpr char kNames[] = "collections.abc.Sequence[str]";
constexpr char kDtypes[] = "collections.abc.Sequence[object]";
// Three counts, as a tuple or a list.
constexpr char kDim3[] = "collections.abc.Sequence[int]";
constexpr char kShapes[] = "collections.abc.Sequence[collections.abc.Sequence[int]]";
constexpr char kTemplate[] = "collections.abc.Sequence[tuple[str, object]] | None";
// A keyword call's settings may also be functions of the inputs (kjit/_shape_functions.py).
constexpr char kShapesOrFunction[] =
    "collections.abc.Sequence[collections.abc.Sequence[int]] | "
    "collections.abc.Callable[..., collections.abc.Sequence[collections.abc.Sequence[int]]]";
constexpr char kDtypesOrFunction[] =
    "collections.abc.Sequence[object] | collections.abc.Callable[..., "
    "collections.abc.Sequence[object]]";
constexpr char kDim3OrFunction[] =
    "collections.abc.Sequence[int] | collections.abc.Callable[..., "
    "collections.abc.Sequence[int]]";
constexpr char kTemplateOrFunction[] =
    "collections.abc.Sequence[tuple[str, object]] | collections.abc.Callable[..., "
    "collections.abc.Sequence[tuple[str, object]]] | None";

// The arguments of metal_kernel and cuda_kernel: the six they share, then |rest|, each
// factory's own, in its order.
template <size_t K>
std::array<Argument, 6 + K> kernel_arguments(const std::array<Argument, K>& rest) {
  std::array<Argument, 6 + K> all = {{{"name", "str"},
                                      {"input_names", kNames},
                                      {"output_names", kNames},
                                      {"source", "str"},
                                      {"header", "str", text("")},
                                      {"ensure_row_contiguous", "bool", Py_True}}};
  std::copy(rest.begin(), rest.end(), all.begin() + 6);
  return all;
}

const ArgumentSignature<8>& metal_kernel_signature() {
  static const auto& signature = *new ArgumentSignature<8>(
      "metal_kernel",
      kernel_arguments<2>({{{"atomic_outputs", "bool", Py_False},
                            {"compile_options", "dict[str, str | bool] | None", Py_None}}}),
      8, "Kernel");
  return signature;
}

const ArgumentSignature<9>& cuda_kernel_signature() {
  static const auto& signature = *new ArgumentSignature<9>(
      "cuda_kernel",
      kernel_arguments<3>({{{"shared_memory", "int", PyLong_FromLong(0)},
                            {"compile_options", "dict[str, str | bool] | None", Py_None},
                            {"atomic_outputs", "bool", Py_False}}}),
      9, "Kernel");
  return signature;
}

// Kernel.__call__'s keyword arguments, in its order: the arrays first and last, the settings
// that bind takes between them.
// A bound kernel's settings are values (|functions| false); a keyword call's may be functions.
std::array<Argument, 11> call_arguments(bool functions) {
  return {{{"inputs", "collections.abc.Sequence[object]"},
           {"output_shapes", functions ? kShapesOrFunction : kShapes},
           {"output_dtypes", functions ? kDtypesOrFunction : kDtypes},
           {"grid", functions ? kDim3OrFunction : kDim3},
           {"threadgroup", functions ? kDim3OrFunction : kDim3},
           {"template", functions ? kTemplateOrFunction : kTemplate, Py_None},
           {"init_value", "float | None", Py_None},
           {"verbose", "bool", Py_False},
           {"stream", "object | None", Py_None},
           {"device", "str | None", Py_None},
           {"outputs", "collections.abc.Sequence[object] | None", Py_None}}};
}

const ArgumentSignature<11>& call_signature() {
  static const auto& signature = *new ArgumentSignature<11>(
      "Kernel.__call__", call_arguments(true), 0, kAnyResults,
      "takes keyword arguments only (inputs=..., output_shapes=..., grid=...)");
  return signature;
}

// The stubs' overloads of __call__, typed by the inputs' library.
const std::array<std::string, 4>& call_overloads() {
  static const auto& overloads = *new std::array<std::string, 4>(
      result_typed_signatures("Kernel.__call__", call_arguments(true), 0, 0));
  return overloads;
}

// A call's settings: its arguments but the arrays.
const ArgumentSignature<9>& bind_signature() {
  static const auto& signature = *new ArgumentSignature<9>(
      "Kernel.bind",
      [] {
        const std::array<Argument, 11> call = call_arguments(false);
        std::array<Argument, 9> settings;
        std::copy(call.begin() + 1, call.end() - 1, settings.begin());
        return settings;
      }(),
      0, "BoundKernel",
      "takes keyword arguments only (output_shapes=..., grid=...); the arrays come with each "
      "call of the bound kernel");
  return signature;
}

const ArgumentSignature<4>& build_signature() {
  static const auto& signature = *new ArgumentSignature<4>(
      "Kernel.build",
      {{{"inputs", "collections.abc.Sequence[tuple[object, int]]"},
        {"output_dtypes", kDtypes},
        {"template", kTemplate, Py_None},
        {"target", "str", text("cpu")}}},
      0, "None", "takes keyword arguments only (inputs=..., output_dtypes=..., target=...)");
  return signature;
}

// A kernel instance is called through vectorcall, its keywords matched here, straight into
// call(): nanobind's dispatch of __call__ (a method lookup, the keywords through a dict, then
// general matching) costs ~0.4 us of a ~1 us call. Kernel.__call__ is defined too, placing its
// arguments the same way, for explicit calls and the signature.
PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
  try {
    const auto slots = call_signature().place(args, PyVectorcall_NARGS(nargsf), kwnames);
    return call(*nb::inst_ptr<PyKernel>(self), slots[0], slots[1], slots[2], slots[3], slots[4],
                slots[5], slots[6], slots[7], slots[8], slots[9], slots[10])
        .release()
        .ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

// A bound kernel holds its stream object: the collector must see that reference, or a stream
// that refers back to the bound kernel would never be freed.
int bound_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Py_VISIT(nb::inst_ptr<PyBoundKernel>(self)->stream_object.ptr());
  return 0;
}
int bound_clear(PyObject* self) {
  nb::inst_ptr<PyBoundKernel>(self)->stream_object.reset();
  return 0;
}
PyType_Slot kBoundKernelSlots[] = {{Py_tp_traverse, reinterpret_cast<void*>(bound_traverse)},
                                   {Py_tp_clear, reinterpret_cast<void*>(bound_clear)},
                                   {0, nullptr}};

constexpr char kKernelNew[] =
    "kjit.Kernel cannot be made directly; use kjit.metal_kernel or kjit.cuda_kernel";
constexpr char kBoundKernelNew[] = "kjit.BoundKernel cannot be made directly; use Kernel.bind";

// Makes |type|'s constructor raise a TypeError saying |message|.
template <const char* message>
void refuse_new(nb::handle type) {
  auto* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  t->tp_new = [](PyTypeObject*, PyObject*, PyObject*) -> PyObject* {
    PyErr_SetString(PyExc_TypeError, message);
    return nullptr;
  };
  PyType_Modified(t);
}

// A precompiled kernel's image: bytes, or any contiguous buffer of them.
std::string to_image(nb::handle obj, const Param& param) {
  const std::string expected = param.str() + ": expected bytes (PTX text, a cubin or a fatbin)";
  if (PyUnicode_Check(obj.ptr())) {
    throw TypeError(expected + ", got str: pass PTX text encoded (ptx.encode())");
  }
  Py_buffer view;
  if (!PyObject_CheckBuffer(obj.ptr()) ||
      PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    throw TypeError(expected + ", got '" + nb::cast<std::string>(obj.type().attr("__name__")) +
                    "'");
  }
  std::string bytes(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
  PyBuffer_Release(&view);
  return bytes;
}

// A precompiled kernel's scalars, as MLX takes them: Python bools, ints (passed as 32-bit ints)
// and floats (passed as 32-bit floats).
std::vector<ScalarArg> to_scalars(nb::handle obj, const Param& param) {
  return to_list(obj, param, [](nb::handle v, const Param& p) -> ScalarArg {
    if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
    if (PyLong_Check(v.ptr())) {
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      if (overflow || x < INT32_MIN || x > INT32_MAX) {
        throw ValueError(p.str() + ": " + nb::cast<std::string>(nb::repr(v)).substr(0, 40) +
                         " does not fit in a 32-bit int, which an int scalar is passed as");
      }
      return static_cast<int>(x);
    }
    if (PyFloat_Check(v.ptr())) {
      const double x = PyFloat_AS_DOUBLE(v.ptr());
      if (std::isfinite(x) && std::fabs(x) > FLT_MAX) {
        throw ValueError(p.str() + ": " + nb::cast<std::string>(nb::repr(v)) +
                         " is out of range of a 32-bit float, which a float scalar is passed as");
      }
      return static_cast<float>(x);
    }
    throw TypeError(p.str() + ": expected a bool, int or float, got '" +
                    nb::cast<std::string>(v.type().attr("__name__")) + "'");
  });
}

std::array<Argument, 14> precompiled_arguments() {
  return {{{"name", "str"},
           {"compiled_source", "bytes | bytearray | memoryview"},
           {"inputs", "collections.abc.Sequence[object]"},
           {"output_shapes", kShapes},
           {"output_dtypes", kDtypes},
           {"scalars", "collections.abc.Sequence[bool | int | float]"},
           {"grid", kDim3},
           {"threadgroup", kDim3},
           {"shared_memory", "int", PyLong_FromLong(0)},
           {"init_value", "float | None", Py_None},
           {"ensure_row_contiguous", "bool", Py_False},
           {"stream", "object | None", Py_None},
           {"device", "str | None", Py_None},
           {"outputs", "collections.abc.Sequence[object] | None", Py_None}}};
}

const ArgumentSignature<14>& precompiled_signature() {
  static const auto& signature = *new ArgumentSignature<14>(
      "precompiled_cuda_kernel", precompiled_arguments(), 0, kAnyResults,
      "takes keyword arguments only (name=..., compiled_source=..., inputs=...)");
  return signature;
}

// The stubs' overloads of precompiled_cuda_kernel, typed by the inputs' library.
const std::array<std::string, 4>& precompiled_overloads() {
  static const auto& overloads = *new std::array<std::string, 4>(
      result_typed_signatures("precompiled_cuda_kernel", precompiled_arguments(), 0, 2));
  return overloads;
}

// Defines |name| in |scope| once per overload of the stubs, each running |f|, with |doc| on the
// last, the general one: help() and the docs read it there.
template <class Scope, class F, size_t N>
void def_overloads(Scope& scope, const char* name, const F& f,
                   const std::array<std::string, N>& signatures, const char* doc) {
  for (size_t k = 0; k + 1 < N; ++k) scope.def(name, f, nb::sig(signatures[k].c_str()));
  scope.def(name, f, nb::sig(signatures[N - 1].c_str()), doc);
}

// kjit.precompiled_cuda_kernel: the kernel for this call, run as a kernel's keyword call runs.
nb::object precompiled_call(const ArgumentSignature<14>::Slots& a) {
  const char* api = "precompiled_cuda_kernel";
  const std::string name = to_text(a[0], api, "name");
  const std::string kernel_prefix = std::string("[kjit.") + api + "] kernel '" + name + "': ";
  const Param t(kernel_prefix);
  const nb::handle inputs = a[2], output_shapes = a[3];
  std::string image = to_image(a[1], t / "compiled_source");
  check_list(inputs, t / "inputs");
  check_list(output_shapes, t / "output_shapes");
  std::vector<ScalarArg> scalars = to_scalars(a[5], t / "scalars");
  const int shared_memory = to_shared_memory(a[8], t / "shared_memory");
  const bool contiguous = to_bool(a[10], api, "ensure_row_contiguous");
  const HeldItems input_items(inputs);  // the arrays, held through the call
  const Kernel k =
      precompiled_kernel(name, std::move(image), input_items.size(), nb::len(output_shapes),
                         std::move(scalars), shared_memory, contiguous);
  const std::vector<Shape> shapes = to_list(output_shapes, t / "output_shapes", to_shape);
  const std::vector<Dtype> dtypes = to_list(a[4], t / "output_dtypes", to_dtype);
  const Dim3 grid = to_dim3(a[6], t / "grid"), threadgroup = to_dim3(a[7], t / "threadgroup");
  const std::optional<double> init = to_init_value(t, a[9]);
  const CallPlace place = to_call_place(t, a[11], a[12], Py_False);
  std::optional<HeldItems> output_items;  // the given outputs, held through the call
  if (!nb::handle(a[13]).is_none()) {
    check_list(a[13], t / "outputs");
    output_items.emplace(a[13]);
  }
  // Warned once in a process: each call makes its kernel afresh.
  static GradWarning& grad_warning = *new GradWarning();
  return run_from_python(k, grad_warning, input_items, output_items ? &*output_items : nullptr,
                         outputs_framework(input_items), place,
                         [&](const std::vector<Array>& arrays, const LaunchOptions& options) {
                           return k(arrays, shapes, dtypes, grid, threadgroup, {}, init,
                                    /*verbose=*/false, options);
                         });
}

}  // namespace

const BoundKernel* bound_kernel_of(nb::handle obj) {
  if (!nb::isinstance<PyBoundKernel>(obj)) return nullptr;
  return &nb::inst_ptr<PyBoundKernel>(obj)->bound;
}

void init_kernel(nb::module_& m) {
  nb::class_<PyKernel> kernel(
      m, "Kernel", nb::is_final(),
      "A kernel built from a body string, made by kjit.metal_kernel or kjit.cuda_kernel. It is "
      "compiled at its first call for each device and signature of its inputs, and kept.\n\n"
      "kernel(inputs=..., output_shapes=..., output_dtypes=..., grid=..., threadgroup=...) runs "
      "it (see Kernel.__call__); kernel.bind(...) fixes everything but the arrays for repeated "
      "calls; kernel.build(...) compiles ahead of time. Kernels pickle, and are safe to call "
      "from several threads.\n\n"
      "Example::\n\n"
      "    kernel = kjit.metal_kernel(name='twice', input_names=['x'], output_names=['y'],\n"
      "                               source='uint i = thread_position_in_grid.x; y[i] = 2 * "
      "x[i];')\n"
      "    (y,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],\n"
      "                  grid=(x.size, 1, 1), threadgroup=(256, 1, 1))");
  nb::class_<PyBoundKernel> bound(
      m, "BoundKernel", nb::is_final(), nb::type_slots(kBoundKernelSlots),
      "A kernel with everything but its arrays fixed (Kernel.bind). Call it with the inputs, "
      "then optionally the outputs to write, as positional arguments: the cheapest way to "
      "launch a kernel many times.\n\n"
      "Example::\n\n"
      "    bound = kernel.bind(output_shapes=[x.shape], output_dtypes=[x.dtype],\n"
      "                        grid=(x.size, 1, 1), threadgroup=(256, 1, 1))\n"
      "    (y,) = bound(x)   # a new output\n"
      "    bound(x, y)       # into y");
  // Kernels come from metal_kernel and cuda_kernel, bound kernels from Kernel.bind, only: an
  // instance Python made itself (__new__) would hold no kernel, and no vectorcall slot.
  refuse_new<kKernelNew>(kernel);
  refuse_new<kBoundKernelNew>(bound);
  // Pickled by what made them (kjit/_pickling.py makes them again), never by a device handle:
  // an unpickled kernel finds its programs in the disk cache.
  kernel.def(
      "__reduce__",
      [](const PyKernel& py) {
        return nb::make_tuple(nb::module_::import_("kjit._pickling").attr("kernel_from"),
                              py.recipe);
      },
      nb::sig("def __reduce__(self) -> tuple[object, ...]"));
  bound.def(
      "__reduce__",
      [](const PyBoundKernel& py) {
        if (py.recipe.is_none()) {
          throw TypeError(Param::of_kernel(py.bound.kernel()).str() +
                          "a bound kernel bound to a stream object cannot be pickled: the stream "
                          "belongs to this process; bind the kernel again where it is unpickled");
        }
        return nb::make_tuple(nb::module_::import_("kjit._pickling").attr("bound_from"), py.recipe);
      },
      nb::sig("def __reduce__(self) -> tuple[object, ...]"));
  kernel.def_prop_ro("name", [](const PyKernel& k) { return k.kernel.name(); })
      .def_prop_ro("input_names", [](const PyKernel& k) { return k.kernel.input_names(); })
      .def_prop_ro("output_names", [](const PyKernel& k) { return k.kernel.output_names(); });
  def_overloads(
      kernel, "__call__",
      [](PyKernel& py, nb::args args, nb::kwargs kwargs) {
        const auto s = call_signature().place(args, kwargs);
        return call(py, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10]);
      },
      call_overloads(),
      "Runs the kernel and returns its outputs as a list of arrays of the inputs' library "
      "(NumPy in, NumPy out; torch, JAX, CuPy and MLX likewise).\n\n"
      "Parameters:\n"
      "    inputs (Sequence): the arrays (or Python numbers, as 0-d inputs), one per "
      "input name, in order.\n"
      "    output_shapes (Sequence[Sequence[int]]): one shape per output.\n"
      "    output_dtypes (Sequence): one dtype per output: kjit.float32, NumPy's, torch's, "
      "JAX's, MLX's or a name ('float16').\n"
      "    grid (Sequence[int]): threads in x, y, z, as MLX counts them (Metal's "
      "dispatchThreads), not groups: grid=(n, 1, 1) runs n threads.\n"
      "    threadgroup (Sequence[int]): the group size in x, y, z (CUDA's blockDim).\n"
      "    template (Sequence[tuple[str, object]] | None): names declared at the top of the "
      "body: ('T', kjit.float32) is using T = float; ('N', 4) is constexpr int N = 4.\n"
      "    init_value (float | None): every output filled with it first.\n"
      "    verbose (bool): prints the kernel as MLX generates it, then the source kjit "
      "compiles.\n"
      "    stream (object | None): a CUDA stream (a handle, or an object with "
      "__cuda_stream__, .cuda_stream or .ptr; MLX's mx.cpu / mx.gpu name a device); by "
      "default the inputs' framework's current stream.\n"
      "    device (str | None): 'cpu', 'cuda' or 'cuda:N'; by default the inputs' device.\n"
      "    outputs (Sequence | None): preallocated arrays to write, instead of new ones.\n\n"
      "output_shapes, output_dtypes, grid, threadgroup and template may each be a function "
      "of the inputs, called with one argument per input (a kjit.ArraySpec of its shape and "
      "dtype, or a scalar's value) once per signature of the inputs.\n\n"
      "Example::\n\n"
      "    (out,) = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],\n"
      "                    grid=(a.size, 1, 1), threadgroup=(256, 1, 1))\n\n"
      "For a call repeated in a loop, kernel.bind(...) fixes everything but the arrays "
      "(docs/calling-kernels.md).");
  kernel.def(
      "build",
      [](const PyKernel& py, nb::args args, nb::kwargs kwargs) {
        const auto slots = build_signature().place(args, kwargs);
        const nb::handle inputs = slots[0], output_dtypes = slots[1], template_args = slots[2],
                         target = slots[3];
        const Kernel& k = py.kernel;
        const Param t = Param::of_kernel(k);
        std::vector<std::pair<Dtype, int>> sig =
            to_list(inputs, t / "inputs", [](nb::handle item, const Param& p) {
              if (!is_list(item) || PySequence_Fast_GET_SIZE(item.ptr()) != 2) {
                throw TypeError(p.str() + ": expected a (dtype, ndim) pair");
              }
              const HeldItems pair(item);  // the ndim's __index__ may change the list
              int64_t ndim = to_int(pair[1], p / " ndim");
              if (ndim < 0 || ndim > kMaxNdim) {
                throw ValueError(p.str() + ": ndim must be in [0, 10], got " +
                                 std::to_string(ndim));
              }
              return std::pair{to_dtype(pair[0], p), static_cast<int>(ndim)};
            });
        std::vector<Dtype> dtypes = to_list(output_dtypes, t / "output_dtypes", to_dtype);
        TemplateArgs targs = to_template_args(t / "template", template_args);
        if (!nb::isinstance<nb::str>(target)) {
          throw TypeError((t / "target").str() + ": expected 'cpu', 'cuda', 'cuda:N' or 'sm_XY'");
        }
        std::string where = utf8_of(target, t / "target");
        run_without_gil([&] { k.build(sig, dtypes, targs, where); });
      },
      nb::sig(build_signature().python()),
      "Compiles and caches the kernel for inputs given as (dtype, ndim) pairs, without "
      "running it. target is 'cpu', 'cuda', 'cuda:N', or a CUDA architecture such as "
      "'sm_90', which needs NVRTC but no GPU. On CUDA it compiles the entry point of every "
      "launch shape (a call compiles the one its launch needs).\n\n"
      "Parameters:\n"
      "    inputs (Sequence[tuple[object, int]]): one (dtype, number of dimensions) per input.\n"
      "    output_dtypes (Sequence): one dtype per output.\n"
      "    template (Sequence[tuple[str, object]] | None): the call's template arguments.\n"
      "    target (str, default 'cpu'): where the kernel will run.\n\n"
      "Example (warming the disk cache before a job)::\n\n"
      "    kernel.build(inputs=[(kjit.float16, 2)], output_dtypes=[kjit.float16],\n"
      "                 template=[('T', kjit.float32)], target='sm_90')");

  kernel.def(
      "bind",
      [](const PyKernel& py, nb::args args, nb::kwargs kwargs) {
        const auto slots = bind_signature().place(args, kwargs);
        const nb::handle output_shapes = slots[0], output_dtypes = slots[1], grid = slots[2],
                         threadgroup = slots[3], template_args = slots[4], init_value = slots[5],
                         verbose = slots[6], stream = slots[7], device = slots[8];
        const Kernel& k = py.kernel;
        const Param t = Param::of_kernel(k);
        if (any_callable({output_shapes, output_dtypes, grid, threadgroup, template_args})) {
          throw TypeError(t.str() +
                          "bind fixes every setting now, so a setting cannot be a function of "
                          "the inputs; give its values, or pass the functions to a keyword "
                          "call (or kjit.torch.op), which evaluates them for each signature");
        }
        // Converted in the order of the parameters, so that the first bad one is reported.
        std::vector<Shape> shapes = to_list(output_shapes, t / "output_shapes", to_shape);
        std::vector<Dtype> dtypes = to_list(output_dtypes, t / "output_dtypes", to_dtype);
        const Dim3 g = to_dim3(grid, t / "grid"), tg = to_dim3(threadgroup, t / "threadgroup");
        TemplateArgs targs = to_template_args(t / "template", template_args);
        const std::optional<double> init = to_init_value(t, init_value);
        CallPlace place = to_call_place(t, stream, device, verbose);
        nb::object recipe = nb::none();
        // A stream that names a device (MLX's mx.cpu) is kept as that device.
        if (!place.stream) {
          nb::list shape_list, dtype_list, template_list;
          for (const Shape& shape : shapes) {
            nb::list extents;
            for (int64_t e : shape) extents.append(e);
            shape_list.append(nb::tuple(extents));
          }
          for (Dtype d : dtypes) dtype_list.append(dtype_text(d));
          for (const auto& [name, value] : targs) {
            nb::object v = std::holds_alternative<Dtype>(value)
                               ? nb::object(dtype_text(std::get<Dtype>(value)))
                           : std::holds_alternative<bool>(value)
                               ? nb::object(nb::bool_(std::get<bool>(value)))
                               : nb::object(nb::int_(std::get<int>(value)));
            template_list.append(nb::make_tuple(nb::str(name.c_str(), name.size()), v));
          }
          nb::dict settings;
          settings["output_shapes"] = shape_list;
          settings["output_dtypes"] = dtype_list;
          settings["grid"] = nb::make_tuple(g.x, g.y, g.z);
          settings["threadgroup"] = nb::make_tuple(tg.x, tg.y, tg.z);
          settings["template"] = template_list;
          settings["init_value"] = init ? nb::object(nb::float_(*init)) : nb::none();
          settings["verbose"] = place.verbose;
          settings["device"] =
              place.device ? nb::object(nb::str(place.device->str().c_str())) : nb::none();
          recipe = nb::make_tuple(py.recipe, settings);
        }
        BoundKernel b = k.bind(std::move(shapes), std::move(dtypes), g, tg, std::move(targs), init,
                               place.verbose);
        nb::object stream_object = place.stream ? nb::borrow(stream) : nb::none();
        return as_python(PyBoundKernel(std::move(b), std::move(place), std::move(stream_object),
                                       py.grad_warning, std::move(recipe)));
      },
      nb::sig(bind_signature().python()),
      "The kernel with every argument of a call but its arrays fixed, and checked now (all but "
      "what depends on the arrays and the device): "
      "bound(x, y) runs it as kernel(inputs=[x, y], ...) would, and bound(x, y, out) writes "
      "into out as outputs=[out] would. The cheapest way to launch a kernel many times.\n\n"
      "Parameters: those of a call (see Kernel.__call__) but inputs and outputs, as values, not "
      "functions of the inputs. stream=None follows the inputs' framework's current stream at "
      "each call. Input dtypes and ranks may change from call to call; a call on arrays laid "
      "out as the previous one's launches again without repeating its checks.\n\n"
      "Example::\n\n"
      "    bound = kernel.bind(output_shapes=[x.shape], output_dtypes=[x.dtype],\n"
      "                        grid=(x.size, 1, 1), threadgroup=(256, 1, 1))\n"
      "    for x in batches:\n"
      "        (y,) = bound(x)          # a new output each call\n"
      "        bound(x, out)            # or into out");
  // Its overloads in the stubs, as a keyword call's: numbers alone, then arrays all of NumPy
  // or all of another library (the outputs too, which the call then returns).
  static const std::array<std::string, 4> bound_overloads = {
      std::string("def __call__(self, *arrays: float) -> ") + kNewArrayResults,
      std::string("def __call__(self, *arrays: ") + kNumPyArray + ") -> " + kNumPyResults,
      std::string("def __call__(self, *arrays: ") + kArrayType + ") -> " + kArrayResults,
      std::string("def __call__(self, *arrays: object) -> ") + kAnyResults};
  def_overloads(
      bound, "__call__",
      [](const PyBoundKernel& py, nb::args args, nb::kwargs kwargs) {
        if (nb::len(kwargs) != 0) throw TypeError(kBoundKeywords);
        return call_bound(py, PySequence_Fast_ITEMS(args.ptr()), nb::len(args));
      },
      bound_overloads,
      "Runs the kernel on the inputs, then writes the outputs when they follow; returns the "
      "outputs as a list of arrays of the inputs' library.\n\n"
      "bound(x, y) takes the inputs in the order of input_names; bound(x, y, out) also every "
      "output, in the order of output_names, written in place (as outputs= would). Keywords "
      "are refused: the settings were fixed by bind.");

  m.def(
      "metal_kernel",
      [](nb::args args, nb::kwargs kwargs) {
        const auto a = metal_kernel_signature().place(args, kwargs);
        const char* api = "metal_kernel";
        std::string name = to_text(a[0], api, "name");
        std::vector<std::string> inputs = to_names(a[1], api, "input_names");
        std::vector<std::string> outputs = to_names(a[2], api, "output_names");
        std::string source = to_text(a[3], api, "source"), header = to_text(a[4], api, "header");
        const bool contiguous = to_bool(a[5], api, "ensure_row_contiguous");
        const bool atomic = to_bool(a[6], api, "atomic_outputs");
        const CompileOptions options = to_compile_options(a[7], api);
        nb::tuple recipe =
            nb::make_tuple(api, nb::make_tuple(name, names_of(inputs), names_of(outputs), source,
                                               header, contiguous, atomic, options_of(options)));
        return as_python(PyKernel(
            metal_kernel(std::move(name), std::move(inputs), std::move(outputs), std::move(source),
                         std::move(header), contiguous, atomic, options),
            std::move(recipe)));
      },
      nb::sig(metal_kernel_signature().python()),
      "A kernel whose body is Metal Shading Language (the API of mlx.core.fast.metal_kernel).");

  m.def(
      "cuda_kernel",
      [](nb::args args, nb::kwargs kwargs) {
        const auto a = cuda_kernel_signature().place(args, kwargs);
        const char* api = "cuda_kernel";
        const int smem = to_shared_memory(a[6], "[kjit.cuda_kernel] shared_memory");
        std::string name = to_text(a[0], api, "name");
        std::vector<std::string> inputs = to_names(a[1], api, "input_names");
        std::vector<std::string> outputs = to_names(a[2], api, "output_names");
        std::string source = to_text(a[3], api, "source"), header = to_text(a[4], api, "header");
        const bool contiguous = to_bool(a[5], api, "ensure_row_contiguous");
        const CompileOptions options = to_compile_options(a[7], api);
        const bool atomic = to_bool(a[8], api, "atomic_outputs");
        nb::tuple recipe = nb::make_tuple(
            api, nb::make_tuple(name, names_of(inputs), names_of(outputs), source, header,
                                contiguous, smem, options_of(options), atomic));
        return as_python(PyKernel(
            cuda_kernel(std::move(name), std::move(inputs), std::move(outputs), std::move(source),
                        std::move(header), contiguous, smem, options, atomic),
            std::move(recipe)));
      },
      nb::sig(cuda_kernel_signature().python()),
      "A kernel whose body is CUDA C++ (the API of mlx.core.fast.cuda_kernel).\n\n"
      "Parameters:\n"
      "    name (str): the kernel's name, in errors and verbose output; letters, digits and "
      "underscores (a leading digit too, as MLX allows).\n"
      "    input_names (Sequence[str]): the names the body reads its inputs by, in call order.\n"
      "    output_names (Sequence[str]): the names the body writes its outputs by.\n"
      "    source (str): the body only: the statements inside the __global__ function kjit "
      "declares.\n"
      "    header (str, default ''): code put before the kernel: __device__ functions, "
      "structs, constants.\n"
      "    ensure_row_contiguous (bool, default True): inputs are copied to row-contiguous "
      "memory first; with False the body reads each input through its strides.\n"
      "    shared_memory (int, default 0): bytes of dynamic shared memory, for extern "
      "__shared__ arrays.\n"
      "    compile_options (dict[str, str | bool] | None): 'math_mode': 'safe' (the default), "
      "'relaxed' or 'fast'; 'debug': True for bounds checks; 'line_info': True for GPU "
      "tools.\n"
      "    atomic_outputs (bool, default False): accepted for MLX's signature; CUDA's atomic* "
      "functions take the outputs' plain pointers.\n\n"
      "What the body sees: each input as const T* __restrict__ name, each output as "
      "T* __restrict__ name; name_shape, name_strides (MLX's Shape and Strides) and name_ndim "
      "where it names them; threadIdx, blockIdx, blockDim and gridDim (blockDim is threadgroup, "
      "the grid counts threads as MLX counts them); cooperative_groups; template arguments; MLX's "
      "CUDA utilities (elem_to_loc, Shape, complex64_t, ...). docs/dialects.md lists it all.\n\n"
      "Example::\n\n"
      "    kernel = kjit.cuda_kernel(\n"
      "        name='myexp', input_names=['inp'], output_names=['out'],\n"
      "        source='size_t i = blockIdx.x * blockDim.x + threadIdx.x;'\n"
      "               'if (i < inp_shape[0]) out[i] = expf(inp[i]);')\n"
      "    (out,) = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],\n"
      "                    grid=(a.size, 1, 1), threadgroup=(256, 1, 1))");

  def_overloads(
      m, "precompiled_cuda_kernel",
      [](nb::args args, nb::kwargs kwargs) {
        return precompiled_call(precompiled_signature().place(args, kwargs));
      },
      precompiled_overloads(),
      "Runs the kernel `name` of compiled_source (PTX text, a cubin or a fatbin, as bytes) and "
      "returns its outputs as a list of arrays of the inputs' library (the API of "
      "mlx.core.fast.precompiled_cuda_kernel).\n\n"
      "The kernel takes, in this order: a pointer to each input (0-d ones too), a pointer to "
      "each output, then each of scalars by value (bool: 1 byte, int: a 32-bit int, float: a "
      "32-bit float); no shapes or strides. grid counts threads: the launch has "
      "ceil(grid / threadgroup) blocks of threadgroup threads, every block whole (a grid smaller "
      "than the threadgroup too, as MLX launches it), so "
      "the kernel checks its own bounds. shared_memory is the dynamic shared memory in bytes. "
      "It runs on a GPU only: device=, else the inputs' GPU, else the first GPU (NumPy inputs "
      "are copied there and the outputs come back as NumPy arrays); the CPU is an error. The "
      "module is loaded once per device and kept.\n\n"
      "Parameters:\n"
      "    name (str): the kernel's entry point in compiled_source (extern \"C\" or mangled).\n"
      "    compiled_source (bytes | bytearray | memoryview): PTX text, a cubin or a fatbin.\n"
      "    inputs (Sequence): the input arrays, passed as pointers in order.\n"
      "    output_shapes (Sequence[Sequence[int]]): one shape per output.\n"
      "    output_dtypes (Sequence): one dtype per output.\n"
      "    scalars (Sequence[bool | int | float]): passed by value after the outputs.\n"
      "    grid (Sequence[int]): threads in x, y, z (not blocks).\n"
      "    threadgroup (Sequence[int]): the block size in x, y, z.\n"
      "    shared_memory (int, default 0): bytes of dynamic shared memory.\n"
      "    init_value (float | None): every output filled with it first.\n"
      "    ensure_row_contiguous (bool, default False): inputs copied to row-contiguous "
      "memory first.\n"
      "    stream (object | None): a CUDA stream, as for a kernel's call.\n"
      "    device (str | None): 'cuda' or 'cuda:N'.\n"
      "    outputs (Sequence | None): preallocated arrays to write, instead of new ones.\n\n"
      "Example::\n\n"
      "    (y,) = kjit.precompiled_cuda_kernel(\n"
      "        name='axpb', compiled_source=ptx, inputs=[x], output_shapes=[x.shape],\n"
      "        output_dtypes=[x.dtype], scalars=[2.0, 1.0], grid=(x.size, 1, 1),\n"
      "        threadgroup=(256, 1, 1))");
}

}  // namespace kjit::python
