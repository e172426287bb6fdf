#include "distributed/group.h"

#include <mpi.h>

#include "distributed/group_state.h"
#ifdef STRATA_WITH_NCCL
#include "distributed/nccl_collectives.h"
#endif

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <sstream>

namespace strata::dist {

void check_mpi(int rc, const char* tag, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  STRATA_FAIL(tag, call, " failed: ", std::string(text, static_cast<size_t>(length)));
}

namespace {

// Note [A failing rank ends the job]
// MPI cannot interrupt a blocking call, so an exception on one rank while the
// others wait in a collective would hang the job for good. init() therefore
// installs a terminate handler: an exception that escapes main (or a thread) on
// any rank prints "[dist] rank R of W: <what>" and calls MPI_Abort, which mpirun
// turns into the end of every rank. Failures every rank sees alike (bad leaves,
// trees that differ between ranks) are instead thrown as strata::Error on every
// rank (Note [Collective signatures]), so a program may catch those.

struct World {
  std::mutex mutex;
  std::shared_ptr<GroupState> state;
  bool we_initialized = false;
};

World& world() {
  static World* w = new World;  // never destroyed: the exit handler still reads it
  return *w;
}

void finalize_at_exit() {
  World& w = world();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (w.state && w.state->comm != MPI_COMM_NULL) MPI_Comm_free(&w.state->comm);
  if (w.we_initialized) MPI_Finalize();
}

[[noreturn]] void abort_every_rank() {
  std::string what = "an exception that is not a std::exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& error) {
      what = error.what();
    } catch (...) {
    }
  } else {
    what = "std::terminate without an exception";
  }
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::fprintf(stderr, "[dist] rank %d of %d: %s; aborting every rank\n", rank, size,
               what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

Group init_world(int* argc, char*** argv) {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (w.state) return Group(w.state);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  STRATA_CHECK(!finalized, "dist::init", "MPI was finalized already; it cannot start again");
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "dist::init",
              "MPI_Init_thread");
    w.we_initialized = true;
    std::atexit(finalize_at_exit);
  }
  auto state = std::make_shared<GroupState>();
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &state->comm), "dist::init", "MPI_Comm_dup");
  MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(state->comm, &state->rank);
  MPI_Comm_size(state->comm, &state->size);
  std::set_terminate(abort_every_rank);
  w.state = state;
  return Group(state);
}

// Note [Collective signatures]
// Ranks that disagree about a collective (a leaf more, another dtype or shape,
// another root or bucket size) would otherwise pair up the wrong messages: a
// hang, or silently mixed data. Every rank hashes what it was given (the
// collective, the root, the bucket options, each leaf's dtype and sizes) and the
// ranks take the max of {hash, ~hash, failed, fast}: max(hash) and ~max(~hash) =
// min(hash) differ exactly when some ranks differ, `failed` says whether any
// rank found its own arguments bad, `fast` whether any took the fast path.
// Every rank then knows the same thing, so all of them throw or none does.
//
// Waiting for that vote before the data moves costs a round trip per call. So
// the group remembers the last call all ranks agreed on (its hash and message
// plan, the same on every rank). A rank whose call has that hash, with no
// problem of its own, takes the fast path: it starts the vote (non-blocking)
// and sends the cached plan's messages right after, then waits for the vote.
// Any other rank waits for the vote first; if it says some rank took the fast
// path, it joins the cached plan's messages with zeros (so nobody hangs) and
// then every rank throws, as the hashes
// or `failed` differ. Only when every rank is on the slow path and they agree
// does a new plan run and become the remembered one. The collectives every rank
// starts are thus always the same: the vote, then the remembered plan (if any
// rank is fast) or the new one (if all agree). After such an error the leaves of
// a fast rank hold unspecified values (partial sums).
enum class Collective : uint64_t { AllReduce = 1, Broadcast = 2 };

class Fnv1a {
 public:
  void add(uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash_ ^= (value >> (8 * byte)) & 0xff;
      hash_ *= 0x100000001b3ull;
    }
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

std::string describe(const std::vector<Tensor>& leaves) {
  std::ostringstream out;
  out << leaves.size() << (leaves.size() == 1 ? " leaf" : " leaves");
  for (size_t i = 0; i < leaves.size() && i < 8; ++i) {
    out << (i == 0 ? ": " : ", ");
    if (!leaves[i].defined()) {
      out << "undefined";
      continue;
    }
    out << leaves[i].dtype() << '[';
    for (int64_t d = 0; d < leaves[i].dim(); ++d) out << (d ? ", " : "") << leaves[i].size(d);
    out << ']';
  }
  if (leaves.size() > 8) out << ", ...";
  return out.str();
}

// Why this rank cannot send a CUDA leaf on `device`, or "" if it can.
std::string cuda_leaf_problem(const GroupState& g, Device device, Device first_cuda) {
#ifdef STRATA_WITH_NCCL
  if (device != first_cuda) {
    std::ostringstream why;
    why << "is on " << device << " and another leaf on " << first_cuda << " (one GPU per rank)";
    return why.str();
  }
  return nccl_leaf_problem(g, device);
#else
  (void)g;
  (void)first_cuda;
  std::ostringstream why;
  why << "is on " << device << "; this build has no NCCL, so the group takes CPU tensors only";
  return why.str();
#endif
}

// Why this rank cannot take part with these leaves, or "" if it can.
std::string local_problem(const GroupState& g, const std::vector<Tensor>& leaves,
                          Collective op) {
  const DispatchKeySet transform_keys{DispatchKey::AutogradCPU,   DispatchKey::AutogradCUDA,
                                      DispatchKey::Batched,       DispatchKey::Functionalize,
                                      DispatchKey::DynamicLayerFront, DispatchKey::Mode};
  std::optional<Device> first_cuda;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor& leaf = leaves[i];
    const std::string at = "leaf " + std::to_string(i);
    if (!leaf.defined()) return at + " is an undefined tensor";
    if (!leaf.device().is_cpu()) {
      if (!first_cuda) first_cuda = leaf.device();
      const std::string problem = cuda_leaf_problem(g, leaf.device(), *first_cuda);
      if (!problem.empty()) return at + " " + problem;
    }
    if (!(leaf.key_set() & transform_keys).empty()) {
      return at + " is a tensor of a transform (grad, vmap, functionalize); collectives take "
                  "plain tensors, outside transforms";
    }
    if (op == Collective::AllReduce && leaf.dtype() == kBool) {
      return at + " is Bool; all_reduce sums Float32, Float64 or Int64 leaves";
    }
  }
  return "";
}

uint64_t signature(const GroupState& g, Collective op, int root,
                   const std::vector<Tensor>& leaves) {
  Fnv1a hash;
  hash.add(static_cast<uint64_t>(op));
  hash.add(static_cast<uint64_t>(root));
  hash.add(g.options.bucket_bytes);
  hash.add(g.options.direct_bytes);
  hash.add(leaves.size());
  for (const Tensor& leaf : leaves) {
    if (!leaf.defined()) continue;
    hash.add(static_cast<uint64_t>(leaf.device().type));
    hash.add(static_cast<uint64_t>(leaf.dtype()));
    hash.add(static_cast<uint64_t>(leaf.dim()));
    for (int64_t d = 0; d < leaf.dim(); ++d) hash.add(static_cast<uint64_t>(leaf.size(d)));
  }
  return hash.value();
}

// Note [Bucketed collectives]
// A tree of gradients has a few large leaves and many small ones. A message per
// leaf pays MPI's latency per leaf; one message for the whole tree copies every
// byte into a staging buffer and back. So the leaves of each dtype (a reduction
// needs one element type) are cut, in tree order, into messages of two kinds: a
// leaf of at least direct_bytes is a message of its own (large enough to run at
// the link's bandwidth), and the other leaves are packed into buckets of at most
// bucket_bytes, one message each. A message of one contiguous leaf is reduced in
// place, with no copy; the others go through a staging buffer and are copied
// back after. The messages are blocking calls, one after another: Open MPI's
// non-blocking collectives (started together, waited for once) took twice as
// long for the MLP's tree as one blocking call of its bytes (bench/README.md).
// The plan depends only on what the signature covers (dtypes, sizes, options),
// never on a rank's strides, so every rank makes the same one and the messages
// pair up.
using Message = GroupMessage;

std::vector<Message> plan(const std::vector<Tensor>& leaves, const CollectiveOptions& options) {
  std::vector<Message> messages;
  for (DeviceType device_type : {DeviceType::CPU, DeviceType::CUDA}) {
    for (ScalarType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
      const auto element = static_cast<size_t>(element_size(dtype));
      Message bucket{device_type, dtype, {}, 0};
      for (size_t i = 0; i < leaves.size(); ++i) {
        const Tensor& leaf = leaves[i];
        if (leaf.device().type != device_type || leaf.dtype() != dtype || leaf.numel() == 0) {
          continue;
        }
        const size_t bytes = static_cast<size_t>(leaf.numel()) * element;
        if (bytes >= options.direct_bytes) {
          messages.push_back({device_type, dtype, {i}, leaf.numel()});
          continue;
        }
        if (!bucket.leaves.empty() &&
            static_cast<size_t>(bucket.numel) * element + bytes > options.bucket_bytes) {
          messages.push_back(std::move(bucket));
          bucket = {device_type, dtype, {}, 0};
        }
        bucket.leaves.push_back(i);
        bucket.numel += leaf.numel();
      }
      if (!bucket.leaves.empty()) messages.push_back(std::move(bucket));
    }
  }
  return messages;
}

MPI_Datatype mpi_type(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float32: return MPI_FLOAT;
    case ScalarType::Float64: return MPI_DOUBLE;
    case ScalarType::Int64: return MPI_INT64_T;
    case ScalarType::Bool: return MPI_BYTE;
  }
  return MPI_DATATYPE_NULL;
}

// One message's calls: NCCL for device memory, MPI (in pieces whose counts fit
// an int) for host memory.
void send(GroupState& g, const char* tag, Collective op, int root, void* data, int64_t numel,
          ScalarType dtype, Device device) {
  if (device.is_cuda()) {
#ifdef STRATA_WITH_NCCL
    return nccl_send(g, tag, op == Collective::AllReduce, root, data, numel, dtype, device);
#else
    STRATA_FAIL(tag, "internal: a CUDA message in a build without NCCL");
#endif
  }
  constexpr int64_t kMaxCount = INT_MAX / 2;
  auto* bytes = static_cast<char*>(data);
  for (int64_t first = 0; first < numel; first += kMaxCount) {
    const int count = static_cast<int>(std::min(kMaxCount, numel - first));
    void* piece = bytes + first * element_size(dtype);
    if (op == Collective::AllReduce) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, piece, count, mpi_type(dtype), MPI_SUM, g.comm),
                tag, "MPI_Allreduce");
    } else {
      check_mpi(MPI_Bcast(piece, count, mpi_type(dtype), root, g.comm), tag, "MPI_Bcast");
    }
  }
}

// Where a rank that was not given the leaves puts a message's zeros.
Device zeros_device(const GroupState& g, DeviceType type) {
#ifdef STRATA_WITH_NCCL
  if (type == DeviceType::CUDA) return nccl_device(g);
#else
  (void)g;
  (void)type;
#endif
  return kCPU;
}

// Each message's staging buffer (undefined: reduced in place).
struct Exchange {
  std::vector<Tensor> staging;
};

// Packs and sends every message of the plan. Without leaves (a rank joining a
// remembered plan it was not given), each message is zeros.
Exchange exchange(GroupState& g, const char* tag, Collective op, int root,
                  const std::vector<Tensor>* leaves, const std::vector<Message>& messages) {
  const bool sends = op == Collective::AllReduce || g.rank == root;
  Exchange ex;
  ex.staging.resize(messages.size());
  for (size_t m = 0; m < messages.size(); ++m) {
    const Message& message = messages[m];
    void* data = nullptr;
    Device device = kCPU;
    if (leaves == nullptr) {
      device = zeros_device(g, message.device_type);
      ex.staging[m] = zeros({message.numel}, message.dtype, device);
      data = ex.staging[m].data_ptr();
    } else if (message.leaves.size() == 1 && (*leaves)[message.leaves[0]].is_contiguous()) {
      device = (*leaves)[message.leaves[0]].device();
      data = (*leaves)[message.leaves[0]].data_ptr();
    } else {
      device = (*leaves)[message.leaves[0]].device();
      ex.staging[m] = empty({message.numel}, message.dtype, device);
      int64_t offset = 0;
      for (size_t i : message.leaves) {
        const Tensor& leaf = (*leaves)[i];
        if (sends) ex.staging[m].narrow(0, offset, leaf.numel()).view(leaf.sizes()).copy_(leaf);
        offset += leaf.numel();
      }
      data = ex.staging[m].data_ptr();
    }
    send(g, tag, op, root, data, message.numel, message.dtype, device);
  }
  return ex;
}

void wait_all(std::vector<MPI_Request>& requests, const char* tag) {
  check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
            tag, "MPI_Waitall");
}

// Copies the staged messages back into their leaves.
void finish_exchange(const Exchange& ex, const std::vector<Tensor>& leaves,
                     const std::vector<Message>& messages) {
  for (size_t m = 0; m < messages.size(); ++m) {
    if (!ex.staging[m].defined()) continue;
    int64_t offset = 0;
    for (size_t i : messages[m].leaves) {
      leaves[i].copy_(ex.staging[m].narrow(0, offset, leaves[i].numel()).view(leaves[i].sizes()));
      offset += leaves[i].numel();
    }
  }
}

void run_unverified(GroupState& g, const char* tag, Collective op, int root,
                    const std::vector<Tensor>& leaves) {
  const std::string problem = local_problem(g, leaves, op);
  STRATA_CHECK(problem.empty(), tag, problem);
  const std::vector<Message> messages = plan(leaves, g.options);
  finish_exchange(exchange(g, tag, op, root, &leaves, messages), leaves, messages);
}

void run(GroupState& g, const char* tag, Collective op, int root,
         const std::vector<Tensor>& leaves) {
  if (!g.options.verify) return run_unverified(g, tag, op, root, leaves);
  const std::string problem = local_problem(g, leaves, op);
  const uint64_t hash = signature(g, op, root, leaves);
  const AgreedCall& agreed = g.agreed;
  const bool fast = problem.empty() && agreed.valid && agreed.signature == hash;
  uint64_t votes[4] = {hash, ~hash, problem.empty() ? 0u : 1u, fast ? 1u : 0u};
  std::vector<MPI_Request> vote(1);
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, votes, 4, MPI_UINT64_T, MPI_MAX, g.comm, vote.data()),
            tag, "MPI_Iallreduce");
  const bool agree = [&] {
    if (fast) return false;
    wait_all(vote, tag);
    return votes[0] == ~votes[1] && votes[2] == 0 && votes[3] == 0;
  }();
  if (fast) {
    const Exchange ex = exchange(g, tag, op, root, &leaves, agreed.plan);
    wait_all(vote, tag);
    if (votes[0] == ~votes[1] && votes[2] == 0) return finish_exchange(ex, leaves, agreed.plan);
  } else if (votes[3] != 0) {
    exchange(g, tag, static_cast<Collective>(agreed.op), agreed.root, nullptr, agreed.plan);
  }
  STRATA_CHECK(problem.empty(), tag, problem);
  STRATA_CHECK(votes[2] == 0, tag, "another rank was given leaves it cannot use (it says why)");
  STRATA_CHECK(votes[0] == ~votes[1], tag,
               "the ranks were given different trees, roots or bucket options; rank ", g.rank,
               " has ", describe(leaves), ". Every rank must pass leaves of the same dtypes "
               "and shapes, in the same order");
  STRATA_CHECK(agree, tag, "internal: the ranks agree but one took the fast path");
  STRATA_CHECK(root >= 0 && root < g.size, tag, "root ", root, " is not a rank of a group of ",
               g.size);
  std::vector<Message> messages = plan(leaves, g.options);
  const Exchange ex = exchange(g, tag, op, root, &leaves, messages);
  g.agreed = {true, hash, static_cast<uint64_t>(op), root, std::move(messages)};
  finish_exchange(ex, leaves, g.agreed.plan);
}

}  // namespace

int Group::rank() const { return state_->rank; }
int Group::size() const { return state_->size; }

void Group::all_reduce_leaves(const std::vector<Tensor>& leaves) const {
  run(*state_, "dist::all_reduce", Collective::AllReduce, 0, leaves);
}

void Group::broadcast_leaves(const std::vector<Tensor>& leaves, int root) const {
  run(*state_, "dist::broadcast", Collective::Broadcast, root, leaves);
}

void Group::barrier() const {
  check_mpi(MPI_Barrier(state_->comm), "dist::barrier", "MPI_Barrier");
}

void Group::abort(const std::string& message, int exit_code) const {
  std::fprintf(stderr, "[dist] rank %d of %d: %s; aborting every rank\n", state_->rank,
               state_->size, message.c_str());
  std::fflush(stderr);
  MPI_Abort(state_->comm, exit_code);
  std::abort();
}

const CollectiveOptions& Group::options() const { return state_->options; }

void Group::set_options(const CollectiveOptions& options) {
  STRATA_CHECK(options.bucket_bytes > 0, "dist::set_options", "bucket_bytes must be positive");
  state_->options = options;
}

Group init(int& argc, char**& argv) { return init_world(&argc, &argv); }
Group init() { return init_world(nullptr, nullptr); }

}  // namespace strata::dist
