"""kjit's exception types (raised from the compiled module)."""


class CompileError(RuntimeError):
    """A kernel failed to compile.

    The message quotes the failing lines of the kernel's ``source`` or ``header`` with their line
    numbers there. ``log`` holds the compiler's diagnostics mapped to those lines, ``source`` the
    complete generated translation unit.
    """

    log: str = ""
    source: str = ""


class LaunchError(RuntimeError):
    """A kernel launch failed in the driver or runtime, or its stream refused what the call
    needed: a stream that captures a CUDA graph builds no kernel, lends no memory of kjit's pool
    and copies nothing from or to the host."""


CompileError.__module__ = "kjit"
LaunchError.__module__ = "kjit"
