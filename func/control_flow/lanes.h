#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "transforms/higher_order_op.h"

// What the control-flow operators share: the predicate's checks and value, the
// per-lane selection of a batched predicate, and the check that two functions'
// results (or a body's result and its carry) agree leaf by leaf.

namespace strata::control_flow {

// A predicate must be a 0-dim Bool tensor (as each sample sees it).
void check_predicate(const Tensor& pred, const char* op, const char* what);

// A while_loop's predicate: cond_fn's one result, checked.
Tensor predicate_of(const char* op, const std::vector<Tensor>& cond_out);

// The predicate's value when it is the same for every sample: it is batched at
// no vmap level (grad and jvp levels only wrap it). nullopt when it may differ
// per lane; then the operators run every function and select per lane.
std::optional<bool> concrete_predicate(const Tensor& pred);

// Whether t is batched at some vmap level (a predicate that may differ per lane).
bool batched_at_any_level(const Tensor& t);

// Whether any lane of a per-lane predicate holds, over every vmap level.
bool any_lane(const Tensor& pred);

// Note [Control-flow functions do not write their inputs]
// A function that writes one of its arguments in place has no meaning every
// mode can keep: trace could not say which replay value the write reaches,
// and under a per-lane predicate every lane runs every function on masked
// copies, so the write would be lost or reach untaken lanes. So every mode
// refuses it, naming the operator, the function and the argument; under
// functionalize the write becomes a new value below the level and never
// reaches memory, so it is allowed there, except where the predicate differs
// per lane (the write would reach a masked copy only). A write is seen as a move of the
// version of the memory under every transform wrapper (one read per argument
// before and after the call, nothing on the ops' path).
//
// How an operator names its functions' arguments: the first `first_count`
// are "<first> leaf i", the rest "<rest> leaf i".
struct ArgNames {
  const char* first;
  size_t first_count = SIZE_MAX;
  const char* rest = "";
};
// Throws the error for fn writing args[index] in place; `how` names the write
// when known (an op's name), else is empty.
[[noreturn]] void fail_input_write(const char* op, const char* fn_name, const ArgNames& names,
                                   size_t index, const Tensor& arg, const std::string& how);
// fn(args), throwing if fn wrote one of args in place; a functionalized write
// too when `functionalized_too`.
std::vector<Tensor> call_without_writes(const char* op, const char* fn_name, const FlatFn& fn,
                                        const std::vector<Tensor>& args, const ArgNames& names,
                                        bool functionalized_too = false);

// Note [Untaken lanes do not poison derivatives]
// With a per-lane predicate both functions run on every lane and where() keeps
// each lane's taken result. where's derivative selects, so the untaken result
// gets a zero cotangent; but the untaken function's own derivative may be NaN
// or inf there (sqrt at a negative number: 0 / (2 sqrt(x)) is NaN), and
// 0 * NaN is NaN. So each function sees its operands as where(taken, x,
// stop_gradient(x)): on its untaken lanes the operand is a constant to every
// grad and jvp level, and the derivative flowing back into x is selected away
// there, never multiplied. Tensors a function captures rather than takes as
// operands are masked as it uses them: a dispatch mode pushed while it runs
// swaps them for their masked versions (masked_call.cpp).
//
// The operands for a function that runs on the lanes where pred == taken_when.
std::vector<Tensor> mask_untaken_lanes(const Tensor& pred, bool taken_when,
                                       const std::vector<Tensor>& operands);
// fn on the lanes where pred == taken_when: its operands and the tensors it
// captures masked. Called under a transform (pred is per lane).
// Writes to a captured tensor or an operand are refused there, at every level
// (functionalize's too): they would reach every lane, or be lost with the
// masked copy.
std::vector<Tensor> run_on_lanes(const Tensor& pred, bool taken_when, const char* op,
                                 const char* fn_name, const FlatFn& fn,
                                 const std::vector<Tensor>& operands, const ArgNames& names);
// where(pred, a[i], b[i]) for every leaf.
std::vector<Tensor> select_lanes(const Tensor& pred, const std::vector<Tensor>& a,
                                 const std::vector<Tensor>& b);

// While one lives on this thread, a while_loop returns its initial carry after
// one call of cond_fn: a length-0 scan's step run for its results' shapes
// inside a transform (Note [A length-0 scan runs no step] in scan.cpp).
class ShapesOnlyScope {
 public:
  ShapesOnlyScope();
  ~ShapesOnlyScope();
  ShapesOnlyScope(const ShapesOnlyScope&) = delete;
  ShapesOnlyScope& operator=(const ShapesOnlyScope&) = delete;
  static bool active();
};

// The number of steps of scan and map: the common size of dim 0 of the xs
// leaves (0 too).
int64_t scan_length(const char* op, const std::vector<Tensor>& xs);
// What scan and map run their function on to learn its results' types: step
// 0's slices, or for a length-0 leaf zeros of a slice's shape and dtype at
// every transform level of the leaf.
std::vector<Tensor> example_slices(const std::vector<Tensor>& xs);

// Throws unless `got` has `expected`'s number of leaves and each leaf its shape
// and dtype; the message names the leaf index and the field that differs.
// `what` says whose results these are ("the branches' outputs").
void check_same_leaves(const char* op, const char* what, const char* expected_name,
                       const std::vector<Tensor>& expected, const char* got_name,
                       const std::vector<Tensor>& got);

}  // namespace strata::control_flow
