// A vector of trivially copyable elements that keeps up to N of them in place: per-call data that
// would otherwise cost an allocation each call.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kjit {

template <class T, size_t N>
requires std::is_trivially_copyable_v<T>
class SmallVector {
 public:
  SmallVector() = default;
  /// |n| value-initialized elements.
  explicit SmallVector(size_t n) { resize(n); }

  T* data() { return size_ > N ? heap_.data() : in_place_; }
  const T* data() const { return size_ > N ? heap_.data() : in_place_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& back() { return data()[size_ - 1]; }

  /// New elements are value-initialized (zeros for plain data).
  void resize(size_t n) {
    if (n > N && size_ <= N) heap_.assign(in_place_, in_place_ + size_);
    if (n > N) heap_.resize(n);
    if (n <= N && size_ > N) {
      std::memcpy(in_place_, heap_.data(), n * sizeof(T));
      heap_.clear();
    }
    for (size_t i = size_; i < n && n <= N; ++i) in_place_[i] = T{};
    size_ = n;
  }
  void push_back(const T& value) {
    resize(size_ + 1);
    back() = value;
  }

 private:
  T in_place_[N];
  std::vector<T> heap_;  // the elements, when more than N
  size_t size_ = 0;
};

}  // namespace kjit
