// kjit kernels inside jax.jit: XLA's FFI calls a handler of kjit's, in C++, with the buffers of a
// custom call; the handler runs a launch that Python prepared at trace time (a bound kernel,
// built for the platform) and registered under an integer key, which the call carries as a
// static attribute. Built with XLA's FFI headers from jaxlib (jax_ffi.cpp) where jax is
// importable when kjit is configured, else as a stub that says so (jax_ffi_absent.cpp).
#pragma once

#include <nanobind/nanobind.h>

namespace kjit::python {

/// Defines jax_ffi_version, jax_ffi_targets and jax_ffi_register on |m|.
void init_jax_ffi(nanobind::module_& m);

// Their docstrings, the same in both builds.
inline constexpr char kJaxFfiVersionDoc[] =
    "The jax version whose XLA FFI headers kjit's handlers were built with ('' when kjit was "
    "built without jax).";
inline constexpr char kJaxFfiTargetsDoc[] =
    "kjit's XLA FFI handlers by platform ('cpu', 'CUDA'), as capsules for "
    "jax.ffi.register_ffi_target.";
inline constexpr char kJaxFfiRegisterDoc[] =
    "Registers |bound| for kjit's XLA FFI handlers and returns its key (the custom call's "
    "attribute 'key'). Kept for the life of the process: a compiled program may use it as long.";

}  // namespace kjit::python
