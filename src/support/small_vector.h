// A vector of trivially copyable elements that keeps up to N of them in place: per-call data that
// would otherwise cost an allocation each call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace kjit {

template <class T, size_t N>
requires std::is_trivially_copyable_v<T>
class SmallVector {
 public:
  SmallVector() = default;
  /// |n| value-initialized elements.
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(const SmallVector& other) { *this = other; }
  SmallVector(SmallVector&& other) noexcept { *this = std::move(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  /// Leaves |other| empty.
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this == &other) return *this;
    if (other.size_ > N) {
      heap_ = std::move(other.heap_);
    } else {
      std::copy_n(other.in_place(), other.size_, in_place());
    }
    size_ = std::exchange(other.size_, 0);
    other.heap_.clear();
    return *this;
  }

  T* data() { return size_ > N ? heap_.data() : in_place(); }
  const T* data() const { return size_ > N ? heap_.data() : in_place(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  /// New elements are value-initialized (zeros for plain data).
  void resize(size_t n) {
    if (n > N) {
      if (size_ <= N) heap_.assign(in_place(), in_place() + size_);
      heap_.resize(n);
    } else {
      if (size_ > N) std::copy_n(heap_.data(), n, in_place());
      std::fill(in_place() + std::min(size_, n), in_place() + n, T{});
      heap_.clear();
    }
    size_ = n;
  }
  void push_back(T value) {  // by value: |value| may be one of the elements, which may move
    resize(size_ + 1);
    data()[size_ - 1] = value;
  }

 private:
  void assign(const T* first, const T* last) {
    const auto n = static_cast<size_t>(last - first);
    if (n > N) {
      heap_.assign(first, last);
    } else {
      std::copy(first, last, in_place());
      heap_.clear();
    }
    size_ = n;
  }

  // Room for N elements, written as they are used: a vector of a few of them does not initialise
  // all N (which for a type with default member initializers is N stores). The bytes' storage
  // implicitly creates the elements, which are trivially copyable.
  T* in_place() { return std::launder(reinterpret_cast<T*>(room_)); }
  const T* in_place() const { return std::launder(reinterpret_cast<const T*>(room_)); }
  alignas(T) unsigned char room_[N * sizeof(T)];
  std::vector<T> heap_;  // the elements, when more than N
  size_t size_ = 0;
};

}  // namespace kjit
