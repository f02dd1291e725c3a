// The C interface between kjit's module and kjit._torch, the optional module built against
// torch's C++ API. Through it a call reads torch tensors, learns torch's current stream and makes
// output tensors without going through torch's Python entry points (DLPack capsules, is_neg(),
// the stream getter), which cost more than the rest of a call. kjit._torch is built only where
// torch is present at build time, and loads only under the torch version it was built for; kjit
// goes the DLPack way otherwise.
#pragma once

#include <Python.h>
#include <kjit/array.h>
#include <kjit/dtype.h>

#include <cstdint>

namespace kjit::python {

/// Changes whenever TorchBridge or TorchTensorView change.
inline constexpr uint32_t kTorchBridgeAbi = 4;

/// Whether a kernel may write a tensor in place now, and if not, why: torch's own rules, and
/// autograd's, which would not see a kernel's write.
enum class TorchWrite : uint8_t {
  Allowed,
  GradLeaf,   // a leaf that requires grad, while grad mode is on (torch refuses in place too)
  InGraph,    // any other tensor that requires grad, while grad mode is on (torch records its
              // in-place writes for autograd; a kernel's would go unseen)
  Inference,  // an inference tensor, outside inference mode
};

/// A strided tensor's memory, as kjit describes arrays (strides in elements). Only the first ndim
/// entries of shape and strides are written: a call keeps a few views, unset, on its stack.
struct TorchTensorView {
  void* data = nullptr;
  int ndim = 0;
  int64_t shape[kMaxNdim];
  int64_t strides[kMaxNdim];
  Dtype dtype = Dtype::Float32;
  bool cuda = false;  // else host memory
  int device_index = 0;
  TorchWrite write = TorchWrite::Allowed;  // filled when read for writing
  /// Filled when read as an input: whether autograd tracks the tensor now (it requires grad,
  /// grad mode is on, and the call is not made below autograd, inside an operator's own
  /// implementation). A kernel's outputs carry no gradient back to it.
  bool needs_grad = false;
};

struct TorchBridge {
  uint32_t abi;
  /// True when |obj| is a torch tensor this bridge reads, now in |view|. False (no Python error
  /// set) for anything else, including tensors with torch's lazy conjugation or negation, other
  /// layouts and devices, and tensors without storage: the general path decides what they are.
  /// |writable| asks for memory the kernel may write (a lazily copied tensor is copied first),
  /// and whether torch allows that (view->write).
  bool (*read)(PyObject* obj, bool writable, TorchTensorView* view);
  /// torch's current stream on CUDA device |index|, as a CUstream, in |stream|. False with a
  /// Python error set on failure.
  bool (*current_stream)(int index, uintptr_t* stream);
  /// A new tensor (a new reference) over |view|'s memory; torch calls release(context) when it
  /// frees the tensor's storage, or at once if making the tensor fails. nullptr with a Python
  /// error set on failure.
  PyObject* (*wrap)(const TorchTensorView* view, void* context, void (*release)(void*));
};

/// The name of the capsule kjit._torch holds its TorchBridge in.
inline constexpr const char* kTorchBridgeCapsule = "kjit._torch.bridge";

}  // namespace kjit::python
