#include "param.h"

namespace kjit::python {

std::string Param::str() const {
  std::string out = parent_ ? parent_->str() : std::string();
  if (kernel_) {
    out += "[kjit." + std::string(kernel_->api()) + "] kernel '" + kernel_->name() + "': ";
  }
  out += owned_ ? *owned_ : std::string(text_);
  if (index_ >= 0) out.append("[").append(std::to_string(index_)).append("]");
  if (label_) out += " ('" + *label_ + "')";
  return out;
}

}  // namespace kjit::python
