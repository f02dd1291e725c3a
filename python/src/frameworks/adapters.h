// The adapters adapter.cpp's table lists, one defined in each library's file. Only that table and
// the adapters themselves name them: the call path finds them through framework_of.
#pragma once

#include "adapter.h"

namespace kjit::python {

extern const FrameworkAdapter kKjitAdapter;
extern const FrameworkAdapter kNumpyAdapter;
extern const FrameworkAdapter kTorchAdapter;
extern const FrameworkAdapter kCupyAdapter;
extern const FrameworkAdapter kJaxAdapter;
extern const FrameworkAdapter kMlxAdapter;
extern const FrameworkAdapter kDlpackAdapter;

}  // namespace kjit::python
