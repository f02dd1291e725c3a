// kjit's exceptions as Python exceptions: ValueError and TypeError for bad arguments,
// kjit.CompileError (with .log and .source) and kjit.LaunchError (both RuntimeErrors, defined
// in kjit/_errors.py).
#include "errors_binding.h"

#include <kjit/errors.h>

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/warning.h"

namespace nb = nanobind;

namespace kjit::python {
namespace {

std::mutex& pending_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& pending_warnings() {
  static auto* w = new std::vector<std::string>();
  return *w;
}
std::atomic<bool> any_pending{false};  // read by every call, without the lock

// With the GIL held.
void issue_warning(const std::string& message, bool raise = true) {
  if (PyErr_WarnEx(PyExc_RuntimeWarning, ("kjit: " + message).c_str(), 1) < 0) {
    if (raise) throw nb::python_error();
    PyErr_Clear();
  }
}

PyObject* compile_error_type = nullptr;
PyObject* launch_error_type = nullptr;

// kjit's errors as their Python types; anything else is rethrown.
void raise_kjit_error(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const CompileError& e) {
    nb::object err = nb::steal(PyObject_CallFunction(compile_error_type, "s", e.what()));
    if (!err.is_valid()) return;
    nb::setattr(err, "log", nb::str(e.log().c_str(), e.log().size()));
    nb::setattr(err, "source", nb::str(e.source().c_str(), e.source().size()));
    PyErr_SetObject(compile_error_type, err.ptr());
  } catch (const Interrupted& e) {
    // SIGINT ran Python's handler too, which raises KeyboardInterrupt here (on the main thread);
    // elsewhere the kernel's end is an error of this call.
    if (PyErr_CheckSignals() == 0) PyErr_SetString(launch_error_type, e.what());
  } catch (const LaunchError& e) {
    PyErr_SetString(launch_error_type, e.what());
  } catch (const InternalError& e) {
    PyErr_SetString(PyExc_RuntimeError, (std::string("kjit internal error: ") + e.what()).c_str());
  }
}

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// The thread that finalizes the interpreter (the main thread) takes the GIL back as usual.
std::atomic<unsigned long> main_thread{0};

}  // namespace

GilReleased::~GilReleased() {
  if (interpreter_finalizing() &&
      PyThread_get_thread_ident() != main_thread.load(std::memory_order_relaxed)) {
    for (;;) pause();  // the process is ending: it ends this thread too
  }
  PyEval_RestoreThread(state_);
}

void set_python_error(const std::exception_ptr& error) noexcept {
  // After kjit's own errors, the mapping nanobind's default translation makes.
  try {
    raise_kjit_error(error);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::bad_alloc& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const std::out_of_range& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const std::overflow_error& e) {
    PyErr_SetString(PyExc_OverflowError, e.what());
  } catch (const std::domain_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::length_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::range_error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "kjit: an unknown C++ exception");
  }
}

void init_errors(nb::module_&) {
  main_thread.store(nb::cast<unsigned long>(
                        nb::module_::import_("threading").attr("main_thread")().attr("ident")),
                    std::memory_order_relaxed);
  // The types live in Python (kjit/_errors.py) so that they are typed and documented there.
  nb::module_ errors = nb::module_::import_("kjit._errors");
  compile_error_type = nb::object(errors.attr("CompileError")).release().ptr();
  launch_error_type = nb::object(errors.attr("LaunchError")).release().ptr();

  nb::register_exception_translator(
      [](const std::exception_ptr& p, void*) { raise_kjit_error(p); });

  // Library warnings become Python warnings; a warning filter that turns them into errors
  // makes the call that warned raise. A thread without the GIL leaves its warning for the call
  // to issue once it has the GIL back: taking the GIL inside the library, perhaps holding a lock
  // or inside a static's initialisation, could wait forever on a thread that holds the GIL and
  // waits for that lock.
  set_warning_handler([](const std::string& message) {
    if (!Py_IsInitialized()) return;
    if (PyGILState_Check()) {
      issue_warning(message);
    } else {
      std::lock_guard lock(pending_mutex());
      pending_warnings().push_back(message);
      any_pending.store(true, std::memory_order_release);
    }
  });
}

void flush_warnings(bool raise) {
  if (!any_pending.load(std::memory_order_acquire)) return;
  std::vector<std::string> messages;
  {
    std::lock_guard lock(pending_mutex());
    messages.swap(pending_warnings());
    any_pending.store(false, std::memory_order_relaxed);
  }
  for (const std::string& m : messages) issue_warning(m, raise);
}

}  // namespace kjit::python
