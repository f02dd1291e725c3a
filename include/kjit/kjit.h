// kjit: GPU kernels written as a body string, run on NVIDIA GPUs or the CPU.
#pragma once

#include <kjit/array.h>
#include <kjit/cache.h>
#include <kjit/device.h>
#include <kjit/dtype.h>
#include <kjit/errors.h>
#include <kjit/kernel.h>
#include <kjit/precompiled.h>
#include <kjit/version.h>
