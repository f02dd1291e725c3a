// The floor for launching a tiny kernel from Python: a C extension whose functions do nothing
// but cuLaunchKernel on memory and a stream given once. What any Python API pays at least:
//   launch()       a call with no arguments;
//   launch_kw(...) a call with any keyword arguments, which it ignores: timed with kjit's call's
//                  arguments, built each call, it is the least a call in that form can cost;
//   launch_torch(x, out) a call with two torch tensors, read through kjit._torch (as kjit reads
//                  them), launched on torch's current stream: the least a bound call can cost.
// Built by bench/gpu.py: nvcc -O2 -std=c++20 -shared -Xcompiler -fPIC -I<Python include>
// -Iinclude -Ipython/src -o python_floor$(EXT_SUFFIX) bench/python_floor.cu -lcuda
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include "torch_bridge.h"

namespace {

__global__ void exp16(const float* in, float* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(in[i]);
}

CUfunction function = nullptr;
CUstream stream = nullptr;
CUdeviceptr in = 0, out = 0;
unsigned n = 16;

PyObject* launch_on(CUdeviceptr x, CUdeviceptr y, CUstream s) {
  void* args[] = {&x, &y, &n};
  CUresult r = cuLaunchKernel(function, 1, 1, 1, 16, 1, 1, 0, s, args, nullptr);
  if (r != CUDA_SUCCESS) return PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel: %d", int(r));
  Py_RETURN_NONE;
}

PyObject* launch_once() { return launch_on(in, out, stream); }

const kjit::python::TorchBridge* bridge = nullptr;

// setup(in, out, stream): device addresses of 16 float32 each, and a stream handle.
PyObject* setup(PyObject*, PyObject* args) {
  unsigned long long i = 0, o = 0, s = 0;
  if (!PyArg_ParseTuple(args, "KKK", &i, &o, &s)) return nullptr;
  if (cudaFree(nullptr) != cudaSuccess ||
      cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t*>(&function),
                          reinterpret_cast<const void*>(exp16)) != cudaSuccess) {
    return PyErr_Format(PyExc_RuntimeError, "no CUDA function");
  }
  in = i;
  out = o;
  stream = reinterpret_cast<CUstream>(s);
  // kjit._torch, when it serves this torch (launch_torch needs it).
  if (PyObject* m = PyImport_ImportModule("kjit._torch")) {
    Py_DECREF(m);
    bridge = static_cast<const kjit::python::TorchBridge*>(
        PyCapsule_Import(kjit::python::kTorchBridgeCapsule, 0));
    if (bridge && bridge->abi != kjit::python::kTorchBridgeAbi) bridge = nullptr;
  }
  PyErr_Clear();
  Py_RETURN_NONE;
}

PyObject* launch(PyObject*, PyObject* const*, Py_ssize_t) { return launch_once(); }

PyObject* launch_kw(PyObject*, PyObject* const*, Py_ssize_t, PyObject*) { return launch_once(); }
PyObject* launch_torch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  kjit::python::TorchTensorView x, y;
  uintptr_t s = 0;
  if (!bridge || nargs != 2 || !bridge->read(args[0], false, &x) ||
      !bridge->read(args[1], true, &y) || !x.cuda || !y.cuda ||
      y.write != kjit::python::TorchWrite::Allowed || !bridge->current_stream(x.device_index, &s)) {
    return PyErr_Occurred()
               ? nullptr
               : PyErr_Format(PyExc_TypeError, "two CUDA tensors, the second writable");
  }
  return launch_on(reinterpret_cast<CUdeviceptr>(x.data), reinterpret_cast<CUdeviceptr>(y.data),
                   reinterpret_cast<CUstream>(s));
}

PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(in, out, stream)"},
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch)), METH_FASTCALL,
     "launch(): one cuLaunchKernel"},
    {"launch_kw", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_kw)),
     METH_FASTCALL | METH_KEYWORDS, "launch_kw(**ignored): one cuLaunchKernel"},
    {"launch_torch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch_torch)),
     METH_FASTCALL, "launch_torch(x, out): one cuLaunchKernel on two torch tensors"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "python_floor", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit_python_floor() { return PyModule_Create(&module); }
