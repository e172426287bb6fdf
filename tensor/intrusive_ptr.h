#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace strata {

// Base for objects owned through IntrusivePtr: the count lives in the object, so
// a handle is one pointer and making one costs a single allocation.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 protected:
  // Called instead of `delete this` when the count reaches zero; storage that
  // lives inside an allocator block overrides it.
  virtual void release_self() { delete this; }

 private:
  template <class T>
  friend class IntrusivePtr;
  void retain() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  // A locked read-modify-write costs tens of cycles, and an op under a few
  // transforms makes and drops dozens of handles. The last handle needs none:
  // no other thread holds one that could take a new reference, and the acquire
  // load still sees what threads that dropped theirs wrote (as libstdc++'s
  // shared_ptr does for a sole owner).
  void release() const {
    if (refcount_.load(std::memory_order_acquire) == 1 ||
        refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      const_cast<RefCounted*>(this)->release_self();
    }
  }
  mutable std::atomic<uint32_t> refcount_{0};
};

template <class T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  IntrusivePtr(std::nullptr_t) {}
  // Takes a new reference to p (p may be null).
  explicit IntrusivePtr(T* p) : ptr_(p) {
    if (ptr_) ptr_->retain();
  }
  IntrusivePtr(const IntrusivePtr& o) : ptr_(o.ptr_) {
    if (ptr_) ptr_->retain();
  }
  IntrusivePtr(IntrusivePtr&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  template <class U>
  IntrusivePtr(IntrusivePtr<U> o) : ptr_(o.detach()) {}
  ~IntrusivePtr() {
    if (ptr_) ptr_->release();
  }
  IntrusivePtr& operator=(IntrusivePtr o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  T* detach() { return std::exchange(ptr_, nullptr); }

  // The first handle to a just-made object: nothing else can see it yet, so the
  // count is set rather than incremented.
  static IntrusivePtr adopt_new(T* fresh) {
    IntrusivePtr handle;
    fresh->refcount_.store(1, std::memory_order_relaxed);
    handle.ptr_ = fresh;
    return handle;
  }

  friend bool operator==(const IntrusivePtr& a, const IntrusivePtr& b) { return a.ptr_ == b.ptr_; }

 private:
  T* ptr_ = nullptr;
};

template <class T, class... Args>
IntrusivePtr<T> make_intrusive(Args&&... args) {
  return IntrusivePtr<T>::adopt_new(new T(std::forward<Args>(args)...));
}

}  // namespace strata
