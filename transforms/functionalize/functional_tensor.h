#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dispatcher/view_layout.h"
#include "tensor/tensor.h"
#include "transforms/tensor_wrapper.h"

namespace strata::functionalization {

// Note [Functional tensors]
// Inside functionalize every tensor of the level is a FunctionalTensorWrapper
// around a tensor of the level below. Below the level nothing that anyone but
// the level can see is ever written: an in-place op on a wrapper computes the
// new value out of place and the wrapper is pointed at it (or see Note
// [Writing the root's memory]). Views share a FunctionalBase with their root base:
// the root's current value and a generation, bumped by every write to the root
// or to any of its views. A write through a view builds the root's new value
// (the old one with the view's region replaced) and bumps the generation; every
// wrapper whose generation is behind is stale and regenerates its value by
// replaying its view steps on the root's value before it is next read.
//
// Note [Writing the root's memory]
// Building the root's new value out of place copies the whole root for every
// write through a view. When no one but the root's own wrappers can read the
// root's old value, the write may instead go in place into the root's memory:
// a wrapper whose value is over that memory (the root's; a view's made as a
// view) reads the written elements as it is, and every other one (a copy made
// by a _copy op) is stale after the write and regenerates from that memory, so
// none sees the old value anyway; the ops that write so change elements, never
// sizes or strides. held_only_by_family() is that test on reference counts:
// the memory is held by the root's value and the family's values alone (no
// input the caller holds, no alias made below the level). The interpreter
// also requires that nothing below the level watches (no transform layer, no
// dispatch mode), each for its own reason:
// - trace and dispatch modes record every op below: the graph must hold no
//   in-place op but the inputs' write-backs;
// - vmap refuses an in-place op whose operand is batched and whose target is
//   not (t = zeros({4}); t.add_(x)), the very write functionalize lets through;
//   where both are batched vmap would take it, but the root's value is then a
//   batched tensor with no storage of its own, so held_only_by_family() cannot
//   count its holders;
// - grad and jvp save or track the root's value: grad(functionalize(f)) of an
//   f that writes a tensor y * y saved is defined only because the write is out
//   of place (in place, backward would find the saved y modified).
// Under them every write is made out of place; one through a view rebuilds the
// root (scatter_into_root).

// What a root and all views of it share. One is made per op result of the
// level, from the per-thread block cache. It lives while it has members: its
// wrappers hold it through the member list, which they join and leave anyway,
// with no reference count of its own (each count taken and dropped would be a
// locked read-modify-write per view). Like that list, a family's wrappers are
// made and freed by one thread at a time, not necessarily the one that made
// the root.
class FunctionalTensorWrapper;

struct FunctionalBase {
  FunctionalBase() = default;
  FunctionalBase(const FunctionalBase&) = delete;
  FunctionalBase& operator=(const FunctionalBase&) = delete;
  static void* operator new(size_t nbytes);
  static void operator delete(void* ptr, size_t nbytes);

  // The root's current value, a tensor of the level below.
  Tensor value;
  // Bumped by every write to the root or a view of it.
  uint64_t generation = 0;
  // Bumped when `value` is replaced by another tensor (a write made out of
  // place), not when its memory is written.
  uint64_t value_epoch = 0;
  // The memory the root and its views stand for, to the layers above: the
  // storage under the root's first value. It stays the same across writes, so
  // a layer above that compares memory before and after a call sees one tensor.
  // Held: a write replaces `value`, which may free the first value, and a layer
  // above still reads this storage's version and compares it by address (a
  // freed one read freed memory, and a new storage at its address looked like
  // this one).
  Storage storage;
  // The root's elements share memory (an expanded input): it has no value that a
  // write could give it elementwise.
  bool overlapping = false;
  // A base made before a WriteWatch began has a smaller serial than the
  // watch's first; one made after, not.
  uint64_t serial = 0;
  // The live wrappers of the root and its views, linked through their
  // next_member() (Note [Writing the root's memory]); the last one to leave
  // frees the base.
  FunctionalTensorWrapper* members = nullptr;

  // Whether nothing but `value` and the values of `members` holds the memory
  // of `value` (Note [Writing the root's memory]).
  bool held_only_by_family() const;
};

// Note [Watching functionalized writes]
// Control flow under a per-lane predicate runs a function on every lane, so a
// write to a tensor the function did not make would reach lanes that do not
// take it, and a tensor it captures must be masked on the lanes that do not
// take it (Note [Untaken lanes do not poison derivatives]). A functionalize
// level hands its calls to no dispatch mode, so neither can be seen by one
// there. A WriteWatch, while alive on its thread, notes the first
// functionalized write to a base made before the watch began, and is shown
// every argument that functionalize at `level` passes below itself and that the
// function did not make (a wrapper of an older base, or a tensor from outside
// the level), to replace it. Watches nest; the innermost one is told.
class WriteWatch {
 public:
  explicit WriteWatch(int64_t level);
  virtual ~WriteWatch();
  WriteWatch(const WriteWatch&) = delete;
  WriteWatch& operator=(const WriteWatch&) = delete;
  // Whether some write reached a base older than the watch.
  bool wrote_earlier_tensor() const { return wrote_earlier_; }
  // Whether a watch is alive on this thread.
  static bool watching() { return tls_watch_ != nullptr; }

  // Called by functionalize for each write to `base`.
  static void note_write(const FunctionalBase& base);
  // Called by functionalize at `level` with each argument it passes below
  // itself: `value`, unwrapped from a base of `serial` (0: a tensor from
  // outside the level).
  static void note_argument(Tensor& value, uint64_t serial, int64_t level) {
    if (tls_watch_ != nullptr) tls_watch_->argument(value, serial, level);
  }

 protected:
  // An argument the function did not make, as functionalize passes it below.
  virtual void earlier_argument(Tensor& value) { (void)value; }

 private:
  void argument(Tensor& value, uint64_t serial, int64_t level);
  // initial-exec and constinit: read on every typed functionalize call, so
  // reached at a fixed offset from the thread pointer, with no initialiser check.
  static thread_local constinit WriteWatch* tls_watch_ __attribute__((tls_model("initial-exec")));
  uint64_t first_serial_;
  int64_t level_;
  bool wrote_earlier_ = false;
  WriteWatch* outer_;
};

// Note [A root's value]
// A root wrapper's synced value is always its base's value: every write to the
// root sets both, and a stale root regenerates to it. So a root reads it from
// the base instead of holding a second reference: a root is made for every op
// result of the level, and each reference taken and dropped is a locked
// read-modify-write. A stale root then sees the base's newer value where it
// would have kept its old one, but a stale value is read only through a sync
// (value_source()), which gives it that newer value anyway.
class FunctionalTensorWrapper final : public TensorImpl {
 public:
  // A root: a new tensor of the level (an input, or the output of an op).
  FunctionalTensorWrapper(Tensor value, int64_t level);
  ~FunctionalTensorWrapper() override;
  FunctionalTensorWrapper(const FunctionalTensorWrapper&) = delete;
  FunctionalTensorWrapper& operator=(const FunctionalTensorWrapper&) = delete;

  // The value as of the last sync (see is_stale). A root's is its base's
  // value, which it does not hold again (Note [A root's value]).
  const Tensor& value() const { return view_ ? value_ : base_->value; }
  int64_t level() const { return level_; }
  FunctionalBase* base() const { return base_; }
  bool is_view() const { return view_; }
  // The view ops that make this view from its root.
  const std::vector<ViewStep>& steps() const {
    if (last_step_) box_last_step();
    return steps_;
  }
  // Some element may share memory with another: a write has no single meaning.
  bool may_overlap() const { return may_overlap_ || base_->overlapping; }
  // Whether value() may no longer be this tensor's: the root or a view of it
  // was written since value() was set, and not only into the memory under
  // value() (Note [Writing the root's memory]).
  bool is_stale() const {
    return generation_ != base_->generation &&
           !(over_root_memory_ && value_epoch_ == base_->value_epoch);
  }
  // Points the wrapper at `value`, current as of the base's generation (a
  // root's: its base's value).
  void set_value(Tensor value);
  // The value, written in place, is current as of the base's generation.
  void mark_current() { generation_ = base_->generation; }
  // Whether a step is as_strided, which addresses memory, not elements.
  bool addresses_memory() const { return root_layout_ != nullptr; }
  // Whether the root's value is laid out (strides, offset) as it was when this
  // view was made: a view that addresses memory regenerates only from such a
  // value. (Recorded for such views only.)
  bool root_layout_unchanged() const;

  const char* impl_name() const override { return "FunctionalTensorWrapper"; }
  // A stale value is not this tensor's: reading it goes through a sync instead.
  const TensorImpl* value_source() const override {
    return is_stale() ? this : value().impl()->value_source();
  }
  const StorageImpl* underlying_storage() const override { return base_->storage.get(); }
  // As a storage's version: bumped by every write to the root or a view of it,
  // so a grad level above sees that a tensor it saved was written.
  uint32_t storageless_version() const override {
    return static_cast<uint32_t>(base_->generation);
  }
  // The next wrapper of the same root (FunctionalBase::members).
  const FunctionalTensorWrapper* next_member() const { return next_member_; }

 private:
  friend Tensor make_functional_view(Tensor, const FunctionalTensorWrapper&, ViewStep, int64_t,
                                     bool);
  friend Tensor make_functional_view(Tensor, const FunctionalTensorWrapper&, const OperatorHandle&,
                                     const ViewIntArgs&, int64_t);
  // A step as a typed kernel made it, its arguments boxed only when the steps
  // are read: most views (a slice written through and dropped) never are.
  struct UnboxedStep {
    UnboxedStep(const OperatorHandle& op, const ViewIntArgs& args) : op(op), args(args) {}
    OperatorHandle op;
    ViewIntArgs args;
  };
  // A view of `parent`'s root made by `steps` from it.
  FunctionalTensorWrapper(Tensor value, int64_t level, const FunctionalTensorWrapper& parent,
                          std::vector<ViewStep> steps, bool may_overlap, bool addresses_memory);
  // A view made from `parent` by one more step, unboxed: no steps are copied
  // when `parent` is the root, nor any argument boxed.
  FunctionalTensorWrapper(Tensor value, int64_t level, const FunctionalTensorWrapper& parent,
                          const OperatorHandle& op, const ViewIntArgs& args);
  // Keeps the root value's layout as it is now (root_layout_unchanged).
  void record_root_layout();
  // Whether `value` lies over the memory of the root's current value.
  bool over_root_memory(const Tensor& value) const;
  // Appends last_step_, boxed, to steps_.
  void box_last_step() const;
  // Links the wrapper into base_->members: the last step of a constructor, so
  // that one that throws leaves no member behind.
  void join_members();

  // A view's value; a root's is its base's (value_ stays empty).
  Tensor value_;
  int64_t level_;
  // Held through the member list (FunctionalBase).
  FunctionalBase* base_;
  // The steps, the last one possibly still unboxed in last_step_.
  mutable std::vector<ViewStep> steps_;
  mutable std::optional<UnboxedStep> last_step_;
  bool view_;
  bool may_overlap_;
  uint64_t generation_;
  // The base's value_epoch when value_ was set, and whether value_ lies over
  // the memory of the root's value then.
  uint64_t value_epoch_ = 0;
  bool over_root_memory_ = false;
  // The root value's strides and offset when the view was made, kept only by
  // a view that addresses memory (root_layout_unchanged): most views never
  // need them.
  struct RootLayout {
    DimVector strides;
    int64_t offset;
  };
  std::unique_ptr<const RootLayout> root_layout_;
  FunctionalTensorWrapper* prev_member_ = nullptr;
  FunctionalTensorWrapper* next_member_ = nullptr;
};

// Only functional wrappers carry the Functionalize key, so the test is a bit test.
inline FunctionalTensorWrapper* as_functional(const Tensor& t) {
  if (!t.defined() || !t.key_set().has(DispatchKey::Functionalize)) return nullptr;
  return static_cast<FunctionalTensorWrapper*>(t.impl());
}

inline FunctionalTensorWrapper* functional_at_level(const Tensor& t, int64_t level) {
  FunctionalTensorWrapper* w = as_functional(t);
  return w != nullptr && w->level() == level ? w : nullptr;
}

// A new root at `level` holding `value`.
Tensor make_functional(Tensor value, int64_t level);
// A view of `base` (a wrapper at `level`) made by one more step, whose result
// (before any copy) `shares_elements` (see may_share_elements).
Tensor make_functional_view(Tensor value, const FunctionalTensorWrapper& base, ViewStep step,
                            int64_t level, bool shares_elements);
// The same for a step `op` whose arguments after self are ints (ViewIntArgs) and
// whose result has no elements that share memory.
Tensor make_functional_view(Tensor value, const FunctionalTensorWrapper& base,
                            const OperatorHandle& op, const ViewIntArgs& args, int64_t level);

// Whether two indices of t may name one memory location (an expanded or
// overlapping as_strided tensor); a tensor of at most one element has none.
// Conservative: a layout it cannot prove free of overlap counts as overlapping.
bool may_share_elements(const Tensor& t);
// The same for a layout given by its sizes and strides.
bool may_share_elements(IntArrayRef sizes, IntArrayRef strides);

}  // namespace strata::functionalization
