// DP-SGD on Fashion-MNIST across processes: every rank holds a shard of the
// training set, draws its part of each Poisson batch, clips its samples'
// gradients by ghost clipping (--per-sample: forms them with vmap(grad) and
// clips those), and the clipped sums are all-reduced with the noise of one
// draw (st::dp::DpSgd over st::dist::Group). Per epoch it
// prints the test accuracy, epsilon at delta = 1e-5 (RDP accountant) and time;
// with --checkpoint it saves parameters, momentum buffers and step after each
// epoch and resumes from them. --device cuda trains on GPU 0 (collectives of its
// tensors go over NCCL).
//
//   mpirun -np 2 ./dp_sgd_distributed
//
// The model is the end-to-end CNN of Papernot et al., "Tempered Sigmoid
// Activations for Deep Learning with Differential Privacy" (2020), with tanh:
// conv 16 8x8/2 pad 3, maxpool 2/1, conv 32 4x4/2, maxpool 2/1, fc 32, fc 10.
// Data come from Debian's dataset-fashion-mnist package; without it (or with
// --synthetic) from a synthetic stand-in, and the run says so.
#include <strata/strata.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace st = strata;
using Params = std::map<std::string, st::Tensor>;

namespace {

struct Config {
  int epochs = 50;                // epsilon 2.93 at delta 1e-5
  int64_t max_steps = -1;         // stop early (a short run); -1: all epochs
  int64_t batch = 2048;           // expected batch size q N
  double sigma = 2.15;            // noise multiplier
  double clip = 0.5;              // C, lr and momentum: the best runs of bench/README.md
  double learning_rate = 0.5;
  double momentum = 0.9;
  int64_t physical_batch = 0;     // samples per pass (0: auto)
  int64_t train_samples = 60000;  // a prefix of the training set
  int64_t test_samples = 10000;   // a prefix of the test set
  uint64_t seed = 0;
  bool synthetic = false;
  bool per_sample = false;        // vmap(grad) instead of ghost clipping
  std::string checkpoint;
  std::string data_dir = st::data::kFashionMnistDir;
  st::Device device = st::kCPU;   // --device cuda: parameters and data on GPU 0
  double accuracy_floor = 0;      // exit 1 below this final test accuracy (CI)
};

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--epochs") c.epochs = std::stoi(value());
    else if (arg == "--max-steps") c.max_steps = std::stoll(value());
    else if (arg == "--batch") c.batch = std::stoll(value());
    else if (arg == "--sigma") c.sigma = std::stod(value());
    else if (arg == "--clip") c.clip = std::stod(value());
    else if (arg == "--lr") c.learning_rate = std::stod(value());
    else if (arg == "--momentum") c.momentum = std::stod(value());
    else if (arg == "--physical-batch") c.physical_batch = std::stoll(value());
    else if (arg == "--train-samples") c.train_samples = std::stoll(value());
    else if (arg == "--test-samples") c.test_samples = std::stoll(value());
    else if (arg == "--seed") c.seed = std::stoull(value());
    else if (arg == "--synthetic") c.synthetic = true;
    else if (arg == "--per-sample") c.per_sample = true;
    else if (arg == "--checkpoint") c.checkpoint = value();
    else if (arg == "--data") c.data_dir = value();
    else if (arg == "--device") c.device = std::string(value()) == "cuda" ? st::cuda(0) : st::kCPU;
    else if (arg == "--accuracy-floor") c.accuracy_floor = std::stod(value());
    else {
      std::fprintf(stderr, "unknown option %s\n", arg.c_str());
      std::exit(2);
    }
  }
  return c;
}

// Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), like PyTorch's default layers.
Params init_params(uint64_t seed) {
  st::Generator gen(seed);
  auto uniform = [&](st::Shape shape, int64_t fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    return (st::rand(shape, gen) * 2.0 - 1.0) * bound;
  };
  return {{"conv1.weight", uniform({16, 1, 8, 8}, 64)},  {"conv1.bias", uniform({16}, 64)},
          {"conv2.weight", uniform({32, 16, 4, 4}, 256)}, {"conv2.bias", uniform({32}, 256)},
          {"fc1.weight", uniform({32, 512}, 512)},        {"fc1.bias", uniform({32}, 512)},
          {"fc2.weight", uniform({10, 32}, 32)},          {"fc2.bias", uniform({10}, 32)}};
}

// x [N, 1, 28, 28] -> logits [N, 10], with the layers of `layers`: plain st::nn
// ones, or a dp::GhostTape's.
template <class Layers>
st::Tensor cnn_with(Layers& layers, const Params& p, const st::Tensor& x) {
  st::Tensor h = layers.conv2d(x, p.at("conv1.weight"), p.at("conv1.bias"), {2}, {3}).tanh();
  h = st::nn::max_pool2d(h, {2, 2}, {1, 1});
  h = layers.conv2d(h, p.at("conv2.weight"), p.at("conv2.bias"), {2}, {0}).tanh();
  h = st::nn::max_pool2d(h, {2, 2}, {1, 1}).flatten(1);
  h = layers.linear(h, p.at("fc1.weight"), p.at("fc1.bias")).tanh();
  return layers.linear(h, p.at("fc2.weight"), p.at("fc2.bias"));
}

struct PlainLayers {
  static st::Tensor conv2d(const st::Tensor& x, const st::Tensor& w, const st::Tensor& b,
                           st::IntArrayRef stride, st::IntArrayRef padding) {
    return st::nn::conv2d(x, w, b, stride, padding);
  }
  static st::Tensor linear(const st::Tensor& x, const st::Tensor& w, const st::Tensor& b) {
    return st::nn::linear(x, w, b);
  }
};

st::Tensor cnn(const Params& p, const st::Tensor& x) {
  PlainLayers plain;
  return cnn_with(plain, p, x);
}

// The per-sample route: one sample's loss, for vmap(grad).
st::Tensor sample_loss(const Params& p, const st::Tensor& x, const st::Tensor& y) {
  return st::nn::cross_entropy(cnn(p, x.unsqueeze(0)), y.unsqueeze(0));
}

// The ghost-clipping route: the batch's per-sample losses.
st::Tensor batch_losses(const Params& p, const st::Tensor& x, const st::Tensor& y,
                        st::dp::GhostTape& tape) {
  return st::nn::cross_entropy(cnn_with(tape, p, x), y, st::nn::Reduction::None);
}

// Fashion-MNIST's pixel mean and std.
st::Tensor normalize(const st::Tensor& images) { return (images - 0.2860) / 0.3530; }

// Class k: a bright 6x6 square at one of 10 places, on noise.
st::data::LabelledImages synthetic(int64_t n, uint64_t seed) {
  st::Generator gen(seed);
  const st::Tensor labels = st::randint(0, 10, {n}, gen);
  const std::vector<int64_t> classes = labels.to_vector<int64_t>();
  std::vector<float> pixels(static_cast<size_t>(n * 784), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = classes[static_cast<size_t>(i)], top = 3 + 13 * (k / 5), left = 1 + 5 * (k % 5);
    for (int64_t r = top; r < top + 6; ++r) {
      for (int64_t c = left; c < left + 5; ++c) pixels[static_cast<size_t>(i * 784 + r * 28 + c)] = 1;
    }
  }
  return {(st::tensor(pixels, {n, 1, 28, 28}) + st::rand({n, 1, 28, 28}, gen) * 0.5).clamp(0.0, 1.0),
          labels};
}

// Test accuracy: each rank scores its shard of the test set, the counts are summed.
double accuracy(const st::dist::Group& world, const Params& p, const st::data::LabelledImages& test) {
  const st::dp::Shard s = st::dp::shard(test.images.size(0), world.rank(), world.size());
  int64_t correct = 0;
  for (int64_t first = s.begin; first < s.end; first += 1000) {
    const int64_t n = std::min<int64_t>(1000, s.end - first);
    const st::Tensor predicted = cnn(p, test.images.narrow(0, first, n)).argmax(1);
    correct += predicted.eq(test.labels.narrow(0, first, n)).to(st::kInt64).sum().item<int64_t>();
  }
  st::Tensor count = st::full({}, correct, st::kInt64);
  world.all_reduce(count);
  return 100.0 * static_cast<double>(count.item<int64_t>()) / static_cast<double>(test.images.size(0));
}

Params on(const Params& tree, st::Device device) {
  return st::tree::map(tree, [device](const st::Tensor& t) { return t.to(device); });
}

// A checkpoint holds the parameters, the momentum buffers (as "momentum/<name>")
// and the step: with them a resumed run continues bit for bit.
constexpr char kMomentum[] = "momentum/";

void save(const std::string& path, const Params& params,
          const st::dp::DpSgd<st::dist::Group>& optimizer) {
  Params file = on(params, st::kCPU);
  const std::vector<st::Tensor>& buffers = optimizer.momentum_buffers();
  size_t i = 0;
  for (const auto& [name, p] : params) {
    if (i < buffers.size()) file[kMomentum + name] = buffers[i++].to(st::kCPU);
  }
  st::save_safetensors(path, file, {{"step", std::to_string(optimizer.steps_taken())}});
}

void resume(const std::string& path, st::Device device, Params& params,
            st::dp::DpSgd<st::dist::Group>& optimizer) {
  const Params file = st::load_safetensors(path);
  std::vector<st::Tensor> buffers;
  for (auto& [name, p] : params) {
    p = file.at(name).to(device);
    if (file.count(kMomentum + name) != 0) buffers.push_back(file.at(kMomentum + name).to(device));
  }
  optimizer.set_momentum_buffers(std::move(buffers));
  optimizer.set_steps_taken(std::stoll(st::load_safetensors_metadata(path).at("step")));
}

}  // namespace

int main(int argc, char** argv) {
  const st::dist::Group world = st::dist::init(argc, argv);
  const Config config = parse(argc, argv);
  const bool root = world.rank() == 0;

  const bool have_dataset =
      std::filesystem::exists(config.data_dir + "/train-images-idx3-ubyte.gz");
  st::data::FashionMnist data;
  if (config.synthetic || !have_dataset) {
    if (root) {
      std::printf("data: SYNTHETIC (%s)\n", config.synthetic ? "--synthetic"
                                                             : "dataset-fashion-mnist is not installed");
    }
    data = {synthetic(config.train_samples, 1), synthetic(config.test_samples, 2)};
  } else {
    data = st::data::load_fashion_mnist(config.data_dir);
    if (root) std::printf("data: Fashion-MNIST from %s\n", config.data_dir.c_str());
  }
  const int64_t n = std::min(config.train_samples, data.train.images.size(0));
  const double q = static_cast<double>(config.batch) / static_cast<double>(n);
  st::dp::DpSgd<st::dist::Group> optimizer(
      world, st::dp::PoissonSampler(n, q, config.seed),
      {.noise_multiplier = config.sigma, .max_grad_norm = config.clip,
       .noise_seed = config.seed + 1, .physical_batch = config.physical_batch,
       .momentum = config.momentum},
      config.learning_rate);
  // Only this rank's shard of the training set stays in memory.
  const st::dp::Shard s = optimizer.shard();
  const st::Device device = config.device;
  const st::Tensor x_shard = normalize(data.train.images.narrow(0, s.begin, s.size())).to(device);
  const st::Tensor y_shard = data.train.labels.narrow(0, s.begin, s.size()).clone().to(device);
  data.train = {};
  const int64_t n_test = std::min(config.test_samples, data.test.images.size(0));
  data.test = {normalize(data.test.images.narrow(0, 0, n_test)).to(device),
               data.test.labels.narrow(0, 0, n_test).to(device)};

  Params params = on(init_params(config.seed + 2), device);
  if (!config.checkpoint.empty() && std::filesystem::exists(config.checkpoint)) {
    resume(config.checkpoint, device, params, optimizer);
    if (root) {
      std::printf("resumed from %s at step %lld\n", config.checkpoint.c_str(),
                  static_cast<long long>(optimizer.steps_taken()));
    }
  }
  const auto steps_per_epoch = static_cast<int64_t>(std::llround(1.0 / q));
  if (root) {
    std::printf("DP-SGD (%s) on %d rank(s), %s: N %lld, expected batch %lld (q %.5f), sigma %g, "
                "C %g, lr %g, momentum %g, %lld steps per epoch\n",
                config.per_sample ? "per-sample gradients" : "ghost clipping", world.size(),
                device.is_cuda() ? "CUDA" : "CPU", static_cast<long long>(n),
                static_cast<long long>(config.batch), q, config.sigma, config.clip,
                config.learning_rate, config.momentum, static_cast<long long>(steps_per_epoch));
  }

  const auto start = std::chrono::steady_clock::now();
  double last_accuracy = accuracy(world, params, data.test);
  int64_t end_step = static_cast<int64_t>(config.epochs) * steps_per_epoch;
  if (config.max_steps >= 0) end_step = std::min(end_step, config.max_steps);
  while (optimizer.steps_taken() < end_step) {
    const int64_t epoch_end = std::min(end_step, (optimizer.steps_taken() / steps_per_epoch + 1) *
                                                     steps_per_epoch);
    while (optimizer.steps_taken() < epoch_end) {
      if (config.per_sample) {
        optimizer.step(sample_loss, params, x_shard, y_shard);
      } else {
        optimizer.step(st::dp::ghost(&batch_losses), params, x_shard, y_shard);
      }
    }
    last_accuracy = accuracy(world, params, data.test);
    if (!config.checkpoint.empty() && root) save(config.checkpoint, params, optimizer);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (root) {
      std::printf("epoch %.2f  step %lld  test accuracy %.2f%%  epsilon %.3f (delta 1e-5)  %.1f s\n",
                  static_cast<double>(optimizer.steps_taken()) / static_cast<double>(steps_per_epoch),
                  static_cast<long long>(optimizer.steps_taken()), last_accuracy,
                  optimizer.epsilon(1e-5), took.count());
      std::fflush(stdout);
    }
  }
  const bool ok = last_accuracy >= config.accuracy_floor;
  if (root) {
    // A weighted sum of every parameter: equal runs print equal digits.
    double checksum = 0;
    for (const auto& [name, p] : params) {
      checksum += (p.to(st::kCPU).to(st::kFloat64).reshape({p.numel()}) *
                   (st::arange(p.numel(), st::kFloat64) * 1e-3 + 1.0)).sum().item<double>();
    }
    std::printf("parameter checksum %.17g after %lld steps\n", checksum,
                static_cast<long long>(optimizer.steps_taken()));
    std::printf("final test accuracy %.2f%% at epsilon %.3f: %s\n", last_accuracy,
                optimizer.epsilon(1e-5), ok ? "OK" : "BELOW THE FLOOR");
  }
  return ok ? 0 : 1;
}
