// The operators issue 26 added, against the values PyTorch 1.13 (Debian's python3-torch,
// float64) prints: forward and the gradient of sum(op(...) * w) w.r.t. each
// differentiable input. Inputs are formulas shared with the torch snippet quoted
// above each case (A(n) = torch.arange(n, dtype=torch.float64), F = torch.nn.functional);
// torch 1.13 has no scaled_dot_product_attention, so its reference is the
// softmax(q k^T / sqrt(E) + mask) v it defines.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <optional>
#include <vector>

#include "strata/strata.h"
#include "tests/test_support.h"

namespace st = strata;
namespace nn = strata::nn;

namespace {

using st::Tensor;

Tensor A(int64_t n) { return st::arange(n, st::kFloat64); }

// Relative 1e-10; the absolute 1e-13 only covers entries that are sums cancelling to ~0.
::testing::AssertionResult torch_close(const Tensor& actual, std::initializer_list<double> torch,
                                       st::IntArrayRef shape) {
  return st::testing::allclose(actual, st::tensor(torch, shape), 1e-13, 1e-10);
}

// x = A(6) * 0.8 - 2.1; w = A(6) + 1; y = f(x); torch.autograd.grad((y * w).sum(), x)
// for f in F.silu, F.gelu, lambda t: F.gelu(t, approximate="tanh")
TEST(ActivationTorchValues, SiluGeluAndTanhGelu) {
  const Tensor x = A(6) * 0.8 - 2.1;
  const Tensor w = A(6) + 1;
  auto dx = [&](auto f) { return st::grad([&](const Tensor& t) { return (f(t) * w).sum(); })(x); };
  auto silu = [](const Tensor& t) { return nn::silu(t); };
  auto gelu = [](const Tensor& t) { return nn::gelu(t); };
  auto gelu_tanh = [](const Tensor& t) { return nn::gelu(t, "tanh"); };
  EXPECT_TRUE(torch_close(silu(x),
                          {-0.22910332451078713, -0.2784145220446738, -0.1887703343990727,
                           0.17233275504349785, 0.8252861161546294, 1.652793898710304},
                          {6}));
  EXPECT_TRUE(torch_close(dx(silu),
                          {-0.0950120588857004, -0.009245708504673837, 0.7801164380920445,
                           2.5911200412755315, 4.781834865486951, 6.509604109408026},
                          {6}));
  EXPECT_TRUE(torch_close(gelu(x),
                          {-0.037515283181914785, -0.1258406299612934, -0.15426876936299344,
                           0.185373426656686, 0.9507673329589791, 1.8454385363495966},
                          {6}));
  EXPECT_TRUE(torch_close(dx(gelu),
                          {-0.07450113099608054, -0.2519573701530785, 0.39751462603151133,
                           2.9293110673084404, 5.519856668947114, 6.575720929535303},
                          {6}));
  EXPECT_TRUE(torch_close(gelu_tanh(x),
                          {-0.037330995038887836, -0.1260709876826906, -0.15428599017485606,
                           0.18537092354275944, 0.9505810461745109, 1.8454512344553327},
                          {6}));
  EXPECT_TRUE(torch_close(dx(gelu_tanh),
                          {-0.0753508892075991, -0.25175613956803344, 0.39789028939607296,
                           2.9291818065552078, 5.5182973128457355, 6.580690848598767},
                          {6}));
}

// x = torch.tensor([-800., -40, -10, 10, 40, 800]); y = f(x); torch.autograd.grad(y.sum(), x)
// (torch's gelu(-10) is -0.0 where x * Phi(x) is about -8e-23: within the absolute 1e-13)
TEST(ActivationTorchValues, ExtremeInputsStayFinite) {
  const Tensor x = st::tensor({-800, -40, -10, 10, 40, 800}, {6});
  auto dx = [&](auto f) { return st::grad([&](const Tensor& t) { return f(t).sum(); })(x); };
  auto silu = [](const Tensor& t) { return nn::silu(t); };
  auto gelu = [](const Tensor& t) { return nn::gelu(t); };
  auto gelu_tanh = [](const Tensor& t) { return nn::gelu(t, "tanh"); };
  EXPECT_TRUE(torch_close(
      silu(x),
      {-0.0, -1.6993417021166355e-16, -0.0004539786870243439, 9.999546021312975, 40.0, 800.0},
      {6}));
  EXPECT_TRUE(torch_close(
      dx(silu),
      {-0.0, -1.6568581595637197e-16, -0.00040856020865708237, 1.0004085602086568, 1.0, 1.0}, {6}));
  EXPECT_TRUE(torch_close(gelu(x), {-0.0, -0.0, -0.0, 10.0, 40.0, 800.0}, {6}));
  EXPECT_TRUE(torch_close(dx(gelu), {0.0, 0.0, -7.694598626706419e-22, 1.0, 1.0, 1.0}, {6}));
  EXPECT_TRUE(torch_close(gelu_tanh(x), {-0.0, -0.0, -0.0, 10.0, 40.0, 800.0}, {6}));
  EXPECT_TRUE(torch_close(dx(gelu_tanh), {0.0, 0.0, 0.0, 1.0, 1.0, 1.0}, {6}));
}

// a = torch.sin(A(6) * 1.3 + 0.2); b = torch.cos(A(6) * 0.9 - 1); w = A(6) + 1
// y = torch.atan2(a, b); torch.autograd.grad((y * w).sum(), (a, b))
TEST(Atan2TorchValues, AllFourQuadrantsAndBothGradients) {
  const Tensor a = (A(6) * 1.3 + 0.2).sin();
  const Tensor b = (A(6) * 0.9 - 1).cos();
  const Tensor w = A(6) + 1;
  EXPECT_TRUE(torch_close(a.atan2(b),
                          {0.35235564326693447, 0.7866482618108749, 0.44818344910247354,
                           -1.7269723203236766, -2.4077696721428596, 2.7335374049934873},
                          {6}));
  const auto [da, db] = st::grad<0, 1>(
      [&](const Tensor& y, const Tensor& x) { return (y.atan2(x) * w).sum(); })(a, b);
  EXPECT_TRUE(torch_close(da,
                          {1.6303822850427372, 1.0025081709072092, 3.4974223963406743,
                           -0.7510845963700151, -3.2179426352499303, -5.398198944008043},
                          {6}));
  EXPECT_TRUE(torch_close(db,
                          {-0.5994920880249075, -1.0050177772171647, -1.6816187402039124,
                           4.770055073311593, 2.9020240745799373, -2.3337549334789616},
                          {6}));
}

// x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.7, 1.2, 2.7]); w = A(9) + 1
// y = f(x); torch.autograd.grad((y * w).sum(), x) for f in torch.floor, torch.ceil,
// torch.round (halves to even; zeros keep their sign)
TEST(RoundingTorchValues, FloorCeilRoundHalfToEvenAndZeroGradients) {
  const Tensor x = st::tensor({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.7, 1.2, 2.7}, {9});
  const Tensor w = A(9) + 1;
  auto dx = [&](auto f) { return st::grad([&](const Tensor& t) { return (f(t) * w).sum(); })(x); };
  // Values and the sign of each zero (torch gives -0.0 for round(-0.5) and ceil(-0.7)).
  auto expect_torch = [](const Tensor& y, std::initializer_list<double> torch) {
    EXPECT_TRUE(torch_close(y, torch, {9}));
    const std::vector<double> got = y.to_vector<double>();
    size_t i = 0;
    for (double expected : torch) {
      EXPECT_EQ(std::signbit(got.at(i)), std::signbit(expected)) << "element " << i;
      ++i;
    }
  };
  expect_torch(x.floor(), {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, -1.0, 1.0, 2.0});
  expect_torch(x.ceil(), {-2.0, -1.0, -0.0, 1.0, 2.0, 3.0, -0.0, 2.0, 3.0});
  expect_torch(x.round(), {-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, -1.0, 1.0, 3.0});
  EXPECT_TRUE(torch_close(dx([](const Tensor& t) { return t.floor(); }),
                          {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {9}));
  EXPECT_TRUE(torch_close(dx([](const Tensor& t) { return t.ceil(); }),
                          {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {9}));
  EXPECT_TRUE(torch_close(dx([](const Tensor& t) { return t.round(); }),
                          {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {9}));
}

// x = (torch.sin(A(24) * 0.7 + 0.3) * 2).view(2, 4, 3); g = [0.5, 1, 1.5, 2];
// b = [0.1, -0.2, 0.3, -0.4]; w = torch.cos(A(24) * 0.5).view(2, 4, 3)
// y = F.group_norm(x, 2, g, b); torch.autograd.grad((y * w).sum(), (x, g, b))
TEST(GroupNormTorchValues, TwoGroupsWithWeightAndBias) {
  const Tensor x = ((A(24) * 0.7 + 0.3).sin() * 2).view({2, 4, 3});
  const Tensor g = st::tensor({0.5, 1, 1.5, 2}, {4});
  const Tensor b = st::tensor({0.1, -0.2, 0.3, -0.4}, {4});
  const Tensor w = (A(24) * 0.5).cos().view({2, 4, 3});
  EXPECT_TRUE(torch_close(
      nn::group_norm(x, 2, g, b),
      {0.02950085967287808,  0.5307467470541072,  0.6686420307094876,   0.3566648081253024,
       -0.8072899585226979,  -2.0071541244755506, -1.547177804299968,   -1.366841111519326,
       -0.39001242855550794, 0.43185393549919365, 1.809224632230599,    2.1642965581032776,
       1.0039312898834136,   0.43925981426315247, -0.13572154573382136, -1.3011801443387059,
       -1.1145163542087388,  -0.1992426182780443, 0.19695574800459534,  1.6342773543591405,
       1.9792485410472311,   0.626165291527966,   -1.689047617557738,   -4.017759865184852},
      {2, 4, 3}));
  const auto [dx, dg, db] =
      st::grad<0, 1, 2>([&](const Tensor& x_, const Tensor& g_, const Tensor& b_) {
        return (nn::group_norm(x_, 2, g_, b_) * w).sum();
      })(x, g, b);
  EXPECT_TRUE(torch_close(
      dx, {0.5003135260134947,   0.08291318097433054,  -0.1712868992136893, -0.14517142020270926,
           -0.17280748331708642, -0.09396090425434031, 0.0980109249654301,  0.07110426424974983,
           -0.08151696475695841, -0.2942991724793855,  -0.1104672004879102, 0.31716814850907343,
           0.0795735844880896,   0.21547723186871637,  0.24795103682371805, 0.2928595047161106,
           -0.16384240978991269, -0.6720189481067218,  -0.6667096884028063, -0.07961209835264713,
           0.3029084039932979,   0.13487649606529445,  0.1501069776138114,  0.1584299090830492},
      {2, 4, 3}));
  EXPECT_TRUE(torch_close(
      dg, {3.272578382788404, 1.4907869733505759, 0.7966745085195638, 0.013198325197558022}, {4}));
  EXPECT_TRUE(torch_close(
      db, {5.108545034480207, -1.5474298690847845, -5.327466751912361, 0.7937296890687706}, {4}));
}

// x = (torch.sin(A(16) * 1.1 + 0.2) * 3).view(1, 4, 2, 2); y = F.group_norm(x, 4)
// torch.autograd.grad((y * torch.cos(A(16) * 0.7).view(1, 4, 2, 2)).sum(), x)
TEST(GroupNormTorchValues, OneGroupPerChannelWithoutAffine) {
  const Tensor x = ((A(16) * 1.1 + 0.2).sin() * 3).view({1, 4, 2, 2});
  const Tensor w = (A(16) * 0.7).cos().view({1, 4, 2, 2});
  EXPECT_TRUE(torch_close(
      nn::group_norm(x, 4),
      {-0.3470718371020025, 1.1869346289693403, 0.6091518600915148, -1.449014651958853,
       -1.2328231037667055, -0.6760188028398347, 0.6371670804125865, 1.2716748261939537,
       1.50798191579534, -0.507669228702749, -1.1958333427563563, 0.1955206556637657,
       0.7290478925764389, 1.0104773994437641, -0.1862272879037846, -1.5532980041164184},
      {1, 4, 2, 2}));
  const Tensor dx =
      st::grad([&](const Tensor& x_) { return (nn::group_norm(x_, 4) * w).sum(); })(x);
  EXPECT_TRUE(torch_close(
      dx,
      {0.5104878285309622, -0.0045677485708201515, -0.26746323380995474, -0.23845684615018742,
       0.055860854942453964, -0.042001905617379376, -0.09156360414617176, 0.07770465482109717,
       0.11913781061121531, 0.19600923364876854, 0.013319845649139073, -0.328466889909123,
       0.1332457551755868, -0.05897513153091882, -0.11185550612525369, 0.037584882480585724},
      {1, 4, 2, 2}));
}

// x = (torch.sin(A(12) * 0.9 + 0.1) * 1.5 + 0.2).view(3, 2, 2); rm = [0.5, -0.5]; rv = [2., 0.5]
// g = [0.7, 1.3]; b = [0.2, -0.1]; w = torch.cos(A(12) * 0.5).view(3, 2, 2)
// y = F.batch_norm(x, rm, rv, g, b, training=True, momentum=0.3); rm, rv;
// torch.autograd.grad((y * w).sum(), (x, g, b)); then the same with training=False
// (using the updated rm, rv)
class BatchNormTorchValues : public ::testing::Test {
 protected:
  const Tensor x = ((A(12) * 0.9 + 0.1).sin() * 1.5 + 0.2).view({3, 2, 2});
  const Tensor g = st::tensor({0.7, 1.3}, {2});
  const Tensor b = st::tensor({0.2, -0.1}, {2});
  const Tensor w = (A(12) * 0.5).cos().view({3, 2, 2});
};

TEST_F(BatchNormTorchValues, TrainingOutputRunningStatsAndGradients) {
  const Tensor rm = st::tensor({0.5, -0.5}, {2});
  const Tensor rv = st::tensor({2.0, 0.5}, {2});
  EXPECT_TRUE(torch_close(
      nn::batch_norm(x, rm, rv, g, b, true, 0.3),
      {0.10477840120818539, 0.7994643648363357, 1.9165417733362904, 0.49700023723300574,
       -0.485028024647834, -0.9195171553625788, -1.9192349122982946, -0.010241870970782904,
       0.8078624040228661, 0.8924400099430259, 0.46010219483201614, -1.5441674221322348},
      {3, 2, 2}));
  EXPECT_TRUE(torch_close(rm, {0.5006708325665827, -0.2549469223562448}, {2}));
  EXPECT_TRUE(torch_close(rv, {1.8523598352898065, 0.6038604870297055}, {2}));
  const auto [dx, dg, db] =
      st::grad<0, 1, 2>([&](const Tensor& x_, const Tensor& g_, const Tensor& b_) {
        return (nn::batch_norm(x_, std::nullopt, std::nullopt, g_, b_, true, 0.3) * w).sum();
      })(x, g, b);
  EXPECT_TRUE(torch_close(
      dx,
      {0.6673399461801262, 0.43308232182521006, 0.3089244226475155, 0.012017557565587578,
       -0.08300192360680865, -0.22471408793845055, -0.8981345005496495, -1.3935435223096042,
       -0.5250169964368867, -0.26768926002319016, 0.35282033694735315, 1.6179157056987976},
      {3, 2, 2}));
  EXPECT_TRUE(torch_close(dg, {1.5279075899634391, 1.5262989387216626}, {2}));
  EXPECT_TRUE(torch_close(db, {-0.2041473104980951, -0.3230777166009129}, {2}));
}

TEST_F(BatchNormTorchValues, EvalUsesRunningStatsAndLeavesThemAlone) {
  const Tensor rm = st::tensor({0.5006708325665827, -0.2549469223562448}, {2});
  const Tensor rv = st::tensor({1.8523598352898065, 0.6038604870297055}, {2});
  EXPECT_TRUE(torch_close(
      nn::batch_norm(x, rm, rv, g, b, false),
      {0.12237832276318514, 0.6945378977414562, 3.035689435880437, 1.5016886376746823,
       -0.36340001681165873, -0.7212554066975775, -1.109370323099632, 0.9535470165396407,
       0.7014547188422035, 0.7711148092854032, 1.4618154637972047, -0.7040607110433754},
      {3, 2, 2}));
  const auto [dx, dg, db] =
      st::grad<0, 1, 2>([&](const Tensor& x_, const Tensor& g_, const Tensor& b_) {
        return (nn::batch_norm(x_, rm, rv, g_, b_, false) * w).sum();
      })(x, g, b);
  EXPECT_TRUE(torch_close(
      dx,
      {0.5143209203897017, 0.4513590709494089, 0.9038747842560222, 0.11833666486678587,
       -0.21403302399018903, -0.4120449217124323, -1.6561640484617708, -1.566603690187934,
       -0.33618258868943013, -0.10841668957752157, 0.4745400748849262, 1.1855376747227908},
      {3, 2, 2}));
  EXPECT_TRUE(torch_close(dg, {1.258185570246303, 1.4116427092371295}, {2}));
  EXPECT_TRUE(torch_close(db, {-0.2041473104980951, -0.3230777166009129}, {2}));
  EXPECT_TRUE(torch_close(rm, {0.5006708325665827, -0.2549469223562448}, {2}));
  EXPECT_TRUE(torch_close(rv, {1.8523598352898065, 0.6038604870297055}, {2}));
}

// x = (torch.sin(A(12) * 0.6 + 0.4) * 2).view(4, 3); y = F.batch_norm(x, None, None, training=True)
// torch.autograd.grad((y * torch.cos(A(12) * 0.3).view(4, 3)).sum(), x)
TEST(BatchNormTorchValues2d, TrainingOnRowsWithoutStatsOrAffine) {
  const Tensor x = ((A(12) * 0.6 + 0.4).sin() * 2).view({4, 3});
  const Tensor w = (A(12) * 0.3).cos().view({4, 3});
  auto bn = [](const Tensor& t) {
    return nn::batch_norm(t, std::nullopt, std::nullopt, {}, {}, true);
  };
  EXPECT_TRUE(torch_close(
      bn(x),
      {0.6262260568488991, 1.143188624718975, 1.1707984472343935, 1.290136235721307,
       0.3879395267687684, -0.5179120947958993, -1.1896353570978169, -1.5933393314854651,
       -1.3627466213325665, -0.7267269354723894, 0.06221117999772175, 0.7098602688940725},
      {4, 3}));
  const Tensor dx = st::grad([&](const Tensor& x_) { return (bn(x_) * w).sum(); })(x);
  EXPECT_TRUE(torch_close(
      dx,
      {0.40290490579947064, 0.3243496935694151, 0.4517184599686352, -0.20650203205654027,
       0.16033721289212344, 0.2944264229384684, 0.27783756351916306, 0.24332262150044207,
       -0.07395425422161454, -0.4742404372620935, -0.7280095279619806, -0.6721906286854891},
      {4, 3}));
}

// q = torch.sin(A(6) * 0.8 + 0.1).view(1, 3, 2); k = torch.cos(A(8) * 0.6).view(1, 4, 2)
// v = torch.sin(A(12) * 0.5 - 1).view(1, 4, 3); w = torch.cos(A(9) * 0.4).view(1, 3, 3)
// y = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(2) + m, -1) @ v;
// torch.autograd.grad((y * w).sum(), (q, k, v)) with m: zeros(3, 4); -inf above
// tril(ones(3, 4)) (causal, as torch 2's is_causal); -inf where bm is False, for
// bm = [[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1]]; torch.sin(A(12) * 1.7).view(3, 4)
class AttentionTorchValues : public ::testing::Test {
 protected:
  void expect_torch(const std::optional<Tensor>& mask, bool causal,
                    std::initializer_list<double> out, std::initializer_list<double> dq,
                    std::initializer_list<double> dk, std::initializer_list<double> dv) {
    EXPECT_TRUE(
        torch_close(nn::scaled_dot_product_attention(q, k, v, mask, causal), out, {1, 3, 3}));
    const auto [gq, gk, gv] =
        st::grad<0, 1, 2>([&](const Tensor& q_, const Tensor& k_, const Tensor& v_) {
          return (nn::scaled_dot_product_attention(q_, k_, v_, mask, causal) * w).sum();
        })(q, k, v);
    EXPECT_TRUE(torch_close(gq, dq, {1, 3, 2}));
    EXPECT_TRUE(torch_close(gk, dk, {1, 4, 2}));
    EXPECT_TRUE(torch_close(gv, dv, {1, 4, 3}));
  }
  const Tensor q = (A(6) * 0.8 + 0.1).sin().view({1, 3, 2});
  const Tensor k = (A(8) * 0.6).cos().view({1, 4, 2});
  const Tensor v = (A(12) * 0.5 - 1).sin().view({1, 4, 3});
  const Tensor w = (A(9) * 0.4).cos().view({1, 3, 3});
};

TEST_F(AttentionTorchValues, Plain) {
  expect_torch(
      std::nullopt, false,
      {-0.19277423961618653, -0.06848705741994562, 0.07256814500232861, -0.337694868021198,
       -0.09853879970962882, 0.16474300343164125, 0.2565973246770647, 0.13823602121499087,
       -0.013970281390297434},
      {-0.15679436286881143, -0.43453532925732785, -0.09394834244209106, -0.0724370103227009,
       -0.19788252608784399, 0.21111794448606172},
      {-0.09275805633369702, -0.37523603793538285, 0.06693197511471499, 0.502285336892089,
       0.0882317478887305, 0.3901275178406224, -0.062405666669748484, -0.5171768167973284},
      {0.5709546559588086, 0.283235958343137, -0.04919946930102982, 0.16136572027543086,
       0.0039601670742477335, -0.1540706094317827, -0.11025780061773444, -0.23128768083482149,
       -0.315802321802951, 0.0029014633189226313, -0.1062693135496251, -0.19866250245896658});
}

TEST_F(AttentionTorchValues, CausalWithMoreKeysThanQueries) {
  expect_torch(
      std::nullopt, true,
      {-0.8414709848078965, -0.479425538604203, 0.0, -0.4576369713258904, -0.09559152512219685,
       0.28985806030239947, 0.5059250221452551, 0.5056463566306706, 0.3815678279796988},
      {0.0, 0.0, -0.0023202575845588285, -0.00382998244060138, 0.22177200909952677,
       0.3080144515698008},
      {-0.04346519099263751, -0.20892717979628897, 0.03476390202965152, 0.16379082514750173,
       0.008701288962985939, 0.045136354648787125, 0.0, 0.0},
      {1.142633422693052, 0.7541330310548926, 0.24657161569460398, -0.12060125241417229,
       -0.2971306607722827, -0.4267496711051332, -0.3970681313434521, -0.507363239249672,
       -0.537556847584201, 0.0, 0.0, 0.0});
}

TEST_F(AttentionTorchValues, BooleanMask) {
  const Tensor bm =
      st::tensor(std::vector<double>{1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1}, {3, 4}).to(st::kBool);
  expect_torch(
      bm, false,
      {-0.39826356116135664, -0.34665831958103566, -0.21017903123571707, -0.4576369713258904,
       -0.09559152512219685, 0.28985806030239947, 0.39233788483703014, 0.21458985584888587,
       -0.015697253933927957},
      {-0.27134757353501315, -0.38203319868972785, -0.0023202575845588285, -0.00382998244060138,
       -0.4055320836479066, 0.060695337234713376},
      {-0.020554586445303107, -0.1351426528016916, 0.04896766556390678, 0.2374702663149921,
       0.07474410635817247, 0.47203343925495683, -0.10315718547677617, -0.5743610527682573},
      {0.8298996703907602, 0.5069041871193992, 0.10387967851407637, -0.0746562871002537,
       -0.23842338968000648, -0.3645486814841543, -0.13092062150022551, -0.23341732214575311,
       -0.29906256000589254, 0.0006412771451466681, -0.0854243442607015, -0.1580033400187595});
}

TEST_F(AttentionTorchValues, AdditiveMask) {
  expect_torch(
      (A(12) * 1.7).sin().view({3, 4}), false,
      {0.006118619563307535, 0.26415554509343514, 0.45751798043798186, -0.3369741175776574,
       -0.015156647195448, 0.3103716990267578, -0.01938167368211595, 0.04575337951872066,
       0.09968640970847881},
      {-0.2400814677018367, -0.5042161409967759, -0.03576167264907378, -0.028093604429944477,
       -0.18508522574726824, 0.23836410406116795},
      {-0.09833918679273279, -0.5535138621219649, 0.11959736919620338, 0.7673642313296476,
       0.03578804165991557, 0.16106282385752674, -0.05704622406338618, -0.37491319306520937},
      {0.3745540621136608, 0.054816822869738935, -0.27357478739269714, 0.38268020572567085,
       0.14333768208915476, -0.11863470983945809, -0.013001633367748566, -0.060338243600927544,
       -0.09814877188716854, -0.11926859553615547, -0.1881771303250282, -0.2273766338754064});
}

// m = torch.sin(A(12) * 1.7).view(3, 4) as above; torch.autograd.grad((y * w).sum(), m)
TEST_F(AttentionTorchValues, AdditiveMaskGradient) {
  const Tensor dm = st::grad([&](const Tensor& m) {
    return (nn::scaled_dot_product_attention(q, k, v, m) * w).sum();
  })((A(12) * 1.7).sin().view({3, 4}));
  EXPECT_TRUE(torch_close(
      dm,
      {-0.6480861189296055, 0.6956329590272705, 0.08693032498126621, -0.1344771650789312,
       -0.024346025821727613, -0.0051019186703787685, 0.012724243186412465, 0.016723701305693898,
       0.318416698040021, -0.6640320693993776, -0.18583834243298641, 0.5314537137923431},
      {3, 4}));
}

// x = torch.sin(A(28) * 0.37 + 0.2).view(1, 4, 7); k = torch.cos(A(36) * 0.45).view(6, 2, 3)
// b = A(6) * 0.1 - 0.25; w = torch.sin(A(18) * 0.3 + 1).view(1, 6, 3)
// y = F.conv1d(x, k, b, stride=2, padding=1, dilation=2, groups=2)
// torch.autograd.grad((y * w).sum(), (x, k, b))
TEST(Conv1dTorchValues, StridePaddingDilationGroups) {
  const Tensor x = (A(28) * 0.37 + 0.2).sin().view({1, 4, 7});
  const Tensor k = (A(36) * 0.45).cos().view({6, 2, 3});
  const Tensor b = A(6) * 0.1 - 0.25;
  const Tensor w = (A(18) * 0.3 + 1).sin().view({1, 6, 3});
  auto conv = [](const Tensor& x_, const Tensor& k_, const Tensor& b_) {
    return nn::conv1d(x_, k_, b_, {2}, {1}, {2}, 2);
  };
  EXPECT_TRUE(
      torch_close(conv(x, k, b),
                  {1.272718823026181, 2.489983065045726, 1.591189503592899, -1.7140548831860172,
                   -2.4782336333941655, -1.277610346050189, 1.255318073922273, 1.41979927107193,
                   0.14769269823549, -0.8007781137064324, -1.6501149320379267, -0.5158849386761174,
                   1.3379758615620183, 1.6316146608263788, 0.23867207391310735, -1.0472536499474425,
                   -0.7288581480764438, 0.6555530350766806},
                  {1, 6, 3}));
  const auto [dx, dk, db] =
      st::grad<0, 1, 2>([&](const Tensor& x_, const Tensor& k_, const Tensor& b_) {
        return (conv(x_, k_, b_) * w).sum();
      })(x, k, b);
  EXPECT_TRUE(torch_close(
      dx, {0.0, 0.3744899191998036,   0.0, 0.40263181066987713, 0.0, -0.014819244310130791, 0.0,
           0.0, -0.4359393007397445,  0.0, -0.9793925894667612, 0.0, -0.9152731863912846,   0.0,
           0.0, 0.057160992847538346, 0.0, 0.4604994767399427,  0.0, 0.5051877856194524,    0.0,
           0.0, 0.2875211313161245,   0.0, 0.48851703918570155, 0.0, 0.14865335323104298,   0.0},
      {1, 4, 7}));
  EXPECT_TRUE(torch_close(
      dk, {1.4857398509590887,  2.2720441302537475,    1.6680418764680145,  -0.7052084454941876,
           -1.6751468670032206, -1.5397699532653712,   1.0145253503798624,  1.8228725731925757,
           1.6317301883583077,  -0.4264903208919496,   -1.1703791387169433, -1.4572121783649041,
           -0.2244617092402665, -0.005812605486344162, 0.3605576247553719,  0.17498717581940693,
           0.22010818843824664, -0.27186527864869653,  0.19653813701318637, -0.6296221543354297,
           -0.7229879472305755, -0.9788173841343042,   -0.3715350055961143, 0.11230078486404921,
           0.31794842002760393, -0.4136431021558511,   -1.0013658171296238, -1.167281143543821,
           -0.8705365847381535, 0.0424017964044702,    0.19874167755694716, 0.11537280312247354,
           -0.5219300003959716, -0.472369805068135,    -0.710733432038958,  -0.05958602622884528},
      {6, 2, 3}));
  EXPECT_TRUE(torch_close(db,
                          {2.804602773266595, 2.353268635610961, 0.12102771056236439,
                           -2.202804572965876, -2.85959827197795, -1.3523050092562452},
                          {6}));
}

}  // namespace
