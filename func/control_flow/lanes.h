#pragma once

#include <optional>
#include <vector>

#include "tensor/tensor.h"
#include "transforms/higher_order_op.h"
#include "transforms/higher_order_op.h"

// What the control-flow operators share: the predicate's checks and value, the
// per-lane selection of a batched predicate, and the check that two functions'
// results (or a body's result and its carry) agree leaf by leaf.

namespace strata::control_flow {

// A predicate must be a 0-dim Bool tensor (as each sample sees it).
void check_predicate(const Tensor& pred, const char* op, const char* what);

// The predicate's value when it is the same for every sample: it is batched at
// no vmap level (grad and jvp levels only wrap it). nullopt when it may differ
// per lane; then the operators run every function and select per lane.
std::optional<bool> concrete_predicate(const Tensor& pred);

// Whether t is batched at some vmap level (a predicate that may differ per lane).
bool batched_at_any_level(const Tensor& t);

// Whether any lane of a per-lane predicate holds, over every vmap level.
bool any_lane(const Tensor& pred);

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
std::vector<Tensor> run_on_lanes(const Tensor& pred, bool taken_when, const FlatFn& fn,
                                 const std::vector<Tensor>& operands);
// where(pred, a[i], b[i]) for every leaf.
std::vector<Tensor> select_lanes(const Tensor& pred, const std::vector<Tensor>& a,
                                 const std::vector<Tensor>& b);

// The number of steps of scan and map: the common size of dim 0 of the xs
// leaves (at least one step).
int64_t scan_length(const char* op, const std::vector<Tensor>& xs);

// Throws unless `got` has `expected`'s number of leaves and each leaf its shape
// and dtype; the message names the leaf index and the field that differs.
// `what` says whose results these are ("the branches' outputs").
void check_same_leaves(const char* op, const char* what, const char* expected_name,
                       const std::vector<Tensor>& expected, const char* got_name,
                       const std::vector<Tensor>& got);

}  // namespace strata::control_flow
