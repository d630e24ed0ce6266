// Einsum (products, diagonals, traces, sums, transposes, implicit outputs,
// "..." broadcasting, three operands; the matrix-product path and the
// general loop, floats and integers) against references written as explicit
// loops per equation, and Det (batched, singular, empty) against Laplace
// expansion; both gradients against finite differences; malformed
// equations and shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "tests/ops/gradient_check.h"

namespace weir {
namespace {

using testing::check_gradient;
using testing::count_of;
using testing::error_of;
using testing::flatten;
using testing::make_tensor;
using testing::random_values;
using testing::run_op;
using testing::to_doubles;
using testing::unflatten;

using Sizes = std::vector<int64_t>;

// Operand k's element at `index`.
struct Operands {
  std::vector<std::vector<double>> values;
  std::vector<Sizes> sizes;
  double operator()(size_t k, const Sizes& index) const { return values[k][static_cast<size_t>(flatten(index, sizes[k]))]; }
};

struct EinsumCase {
  std::string equation;
  std::vector<Sizes> inputs;
  Sizes output;
  // The output element at `o`, by explicit loops.
  std::function<double(const Operands&, const Sizes& o)> element;
};

std::vector<EinsumCase> einsum_cases() {
  return {
      {"ij,jk->ik", {{3, 4}, {4, 5}}, {3, 5}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 4; ++j) sum += x(0, {o[0], j}) * x(1, {j, o[1]});
         return sum;
       }},
      {"bij, bjk -> bik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 4; ++j) sum += x(0, {o[0], o[1], j}) * x(1, {o[0], j, o[2]});
         return sum;
       }},
      {"ij,kj->ik", {{3, 4}, {2, 4}}, {3, 2}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 4; ++j) sum += x(0, {o[0], j}) * x(1, {o[1], j});
         return sum;
       }},
      {"ijk,ikl->jl", {{2, 3, 4}, {2, 4, 5}}, {3, 5}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t i = 0; i < 2; ++i) {
           for (int64_t k = 0; k < 4; ++k) sum += x(0, {i, o[0], k}) * x(1, {i, k, o[1]});
         }
         return sum;
       }},
      {"ii->i", {{4, 4}}, {4}, [](const Operands& x, const Sizes& o) { return x(0, {o[0], o[0]}); }},
      {"ii", {{4, 4}}, {}, [](const Operands& x, const Sizes&) {
         double sum = 0;
         for (int64_t i = 0; i < 4; ++i) sum += x(0, {i, i});
         return sum;
       }},
      {"iij->ji", {{3, 3, 2}}, {2, 3}, [](const Operands& x, const Sizes& o) { return x(0, {o[1], o[1], o[0]}); }},
      {"ij->ji", {{3, 4}}, {4, 3}, [](const Operands& x, const Sizes& o) { return x(0, {o[1], o[0]}); }},
      {"ij->", {{3, 4}}, {}, [](const Operands& x, const Sizes&) {
         double sum = 0;
         for (int64_t i = 0; i < 3; ++i) {
           for (int64_t j = 0; j < 4; ++j) sum += x(0, {i, j});
         }
         return sum;
       }},
      {"ij->i", {{3, 4}}, {3}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 4; ++j) sum += x(0, {o[0], j});
         return sum;
       }},
      {"i,j->ij", {{3}, {4}}, {3, 4}, [](const Operands& x, const Sizes& o) { return x(0, {o[0]}) * x(1, {o[1]}); }},
      {"i,i", {{5}, {5}}, {}, [](const Operands& x, const Sizes&) {
         double sum = 0;
         for (int64_t i = 0; i < 5; ++i) sum += x(0, {i}) * x(1, {i});
         return sum;
       }},
      {"ij,ij->ij", {{2, 3}, {2, 3}}, {2, 3}, [](const Operands& x, const Sizes& o) { return x(0, o) * x(1, o); }},
      {"ij,jk", {{2, 3}, {3, 4}}, {2, 4}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 3; ++j) sum += x(0, {o[0], j}) * x(1, {j, o[1]});
         return sum;
       }},
      // Implicit output in ASCII order: 'C' before 'a'.
      {"ab,bC", {{2, 3}, {3, 4}}, {4, 2}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t b = 0; b < 3; ++b) sum += x(0, {o[1], b}) * x(1, {b, o[0]});
         return sum;
       }},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 2}}, {2, 3, 3, 2}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 4; ++j) sum += x(0, {o[0], 0, o[2], j}) * x(1, {o[1], j, o[3]});
         return sum;
       }},
      {"...ii->...i", {{2, 3, 3}}, {2, 3}, [](const Operands& x, const Sizes& o) { return x(0, {o[0], o[1], o[1]}); }},
      {"i...,i...->...", {{3, 2}, {3, 1}}, {2}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t i = 0; i < 3; ++i) sum += x(0, {i, o[0]}) * x(1, {i, 0});
         return sum;
       }},
      {"...i->i", {{2, 3, 4}}, {4}, [](const Operands& x, const Sizes& o) {  // the "..." axes summed
         double sum = 0;
         for (int64_t a = 0; a < 2; ++a) {
           for (int64_t b = 0; b < 3; ++b) sum += x(0, {a, b, o[0]});
         }
         return sum;
       }},
      {"ij...", {{2, 3}}, {2, 3}, [](const Operands& x, const Sizes& o) { return x(0, o); }},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}, {2, 2}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t j = 0; j < 3; ++j) {
           for (int64_t k = 0; k < 4; ++k) sum += x(0, {o[0], j}) * x(1, {j, k}) * x(2, {k, o[1]});
         }
         return sum;
       }},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, {2, 4}, [](const Operands& x, const Sizes& o) {
         double sum = 0;
         for (int64_t n = 0; n < 3; ++n) {
           for (int64_t m = 0; m < 5; ++m) sum += x(0, {o[0], n}) * x(1, {o[1], n, m}) * x(2, {o[0], m});
         }
         return sum;
       }},
      {"ij,j->", {{3, 4}, {4}}, {}, [](const Operands& x, const Sizes&) {  // i summed in one operand only
         double sum = 0;
         for (int64_t i = 0; i < 3; ++i) {
           for (int64_t j = 0; j < 4; ++j) sum += x(0, {i, j}) * x(1, {j});
         }
         return sum;
       }},
      {"ij,jk->ik", {{3, 0}, {0, 2}}, {3, 2}, [](const Operands&, const Sizes&) { return 0.0; }},
  };
}

TEST(EinsumKernels, EveryFormAgainstExplicitLoops) {
  for (DType dtype : {DType::kFloat64, DType::kFloat32, DType::kInt32, DType::kFloat16, DType::kInt64, DType::kUInt32}) {
    uint32_t seed = 1;
    for (const EinsumCase& c : einsum_cases()) {
      Operands x;
      std::vector<Tensor> inputs;
      for (const Sizes& sizes : c.inputs) {
        // Integers small enough that sums of triple products stay exact in i32.
        std::vector<double> values = random_values(DType::kFloat64, count_of(sizes), seed++, -2.0, 2.0);
        if (is_integer(dtype)) {
          for (double& v : values) v = std::round(dtype == DType::kUInt32 ? std::fabs(v * 5) : v * 5);
        }
        inputs.push_back(make_tensor(dtype, values, sizes));
        x.values.push_back(to_doubles(inputs.back()));
        x.sizes.push_back(sizes);
      }
      Tensor y = run_op("Einsum", inputs, {{"equation", Attribute(c.equation)}})[0];
      ASSERT_EQ(y.dtype(), dtype);
      ASSERT_EQ(y.sizes(), c.output) << c.equation;
      std::vector<double> got = to_doubles(y);
      double tolerance = dtype == DType::kFloat16 ? 2e-2 : dtype == DType::kFloat32 ? 1e-5 : dtype == DType::kFloat64 ? 1e-12 : 0;
      for (int64_t flat = 0; flat < count_of(c.output); ++flat) {
        double expected = c.element(x, unflatten(flat, c.output));
        ASSERT_NEAR(got[static_cast<size_t>(flat)], expected, tolerance * std::max(1.0, std::fabs(expected)))
            << dtype_name(dtype) << " " << c.equation << " element " << flat;
      }
    }
  }
}

TEST(EinsumKernels, IntegersWrapAround) {
  Tensor a = Tensor::from_vector<int8_t>({100, 100}, {2});
  Tensor b = Tensor::from_vector<int8_t>({2, 1}, {2});
  // 200 + 100 = 300 wraps to 44 in int8.
  EXPECT_EQ(to_doubles(run_op("Einsum", {a, b}, {{"equation", Attribute("i,i->")}})[0]), (std::vector<double>{44}));
}

TEST(EinsumKernels, RejectsMalformedEquationsAndShapes) {
  Tensor a(DType::kFloat32, {3, 4}), b(DType::kFloat32, {5, 2});
  auto error = [](const std::string& equation, const std::vector<Tensor>& inputs) {
    return error_of("Einsum", inputs, {{"equation", Attribute(equation)}});
  };
  EXPECT_NE(error("ij,jk->ik", {a, b}).find("subscript 'j' has sizes 4 and 5"), std::string::npos);
  EXPECT_NE(error("ij->i", {a, b}).find("has 1 input terms for 2 inputs"), std::string::npos);
  EXPECT_NE(error("ijk->i", {a}).find("input 0 has rank 2, but its term has 3 subscripts"), std::string::npos);
  EXPECT_NE(error("ij->k", {a}).find("output subscript 'k' appears in no input term"), std::string::npos);
  EXPECT_NE(error("ij->ii", {a}).find("output subscript 'i' appears twice"), std::string::npos);
  EXPECT_NE(error("i1->i", {a}).find("has the character '1'"), std::string::npos);
  EXPECT_NE(error("..ij->ij", {a}).find("outside a single \"...\""), std::string::npos);
  EXPECT_NE(error("...i,...i->...i", {Tensor(DType::kFloat32, {2, 3}), Tensor(DType::kFloat32, {4, 3})}).find("do not broadcast"),
            std::string::npos);
  EXPECT_NE(error("ij,jk", {a, Tensor(DType::kFloat64, {4, 2})}).find("share one dtype"), std::string::npos);
  EXPECT_NE(error("ij->i->j", {a}).find("single \"->\""), std::string::npos);
}

TEST(EinsumInference, OutputShapesWithSymbols) {
  Graph g("einsum");
  Value* a = g.add_input("a", {DType::kFloat32, Shape{Dim::symbol("B"), 3, 4}});
  Value* b = g.add_input("b", {DType::kFloat32, Shape{Dim::symbol("B"), 4, Dim::symbol("K")}});
  Value* c = g.add_input("c", {DType::kFloat32, Shape{1, 5, 5}});
  Node* product = g.add_node("Einsum", {a, b}, 1, {{"equation", Attribute("bij,bjk->bki")}}, "product");
  Node* diagonal = g.add_node("Einsum", {c, a}, 1, {{"equation", Attribute("...ii,...jk->...ik")}}, "diagonal");
  infer_graph_types(g, default_op_registry());
  EXPECT_EQ(product->output(0)->shape(), (Shape{Dim::symbol("B"), Dim::symbol("K"), 3}));
  EXPECT_EQ(diagonal->output(0)->shape(), (Shape{Dim::symbol("B"), 5, 4}));
}

TEST(EinsumGradients, MatchFiniteDifferences) {
  auto random = [](const Sizes& sizes, uint32_t seed) {
    return make_tensor(DType::kFloat64, random_values(DType::kFloat64, count_of(sizes), seed), sizes);
  };
  auto check = [&](const std::string& equation, const std::vector<Sizes>& shapes) {
    std::vector<Tensor> inputs;
    std::vector<size_t> all;
    for (size_t i = 0; i < shapes.size(); ++i) {
      inputs.push_back(random(shapes[i], static_cast<uint32_t>(40 + i)));
      all.push_back(i);
    }
    SCOPED_TRACE(equation);
    check_gradient("Einsum", inputs, all, {{"equation", Attribute(equation)}});
  };
  check("ij,jk->ik", {{2, 3}, {3, 4}});
  check("ii->i", {{3, 3}});
  check("iij->j", {{2, 2, 3}});
  check("i,i", {{4}, {4}});
  check("...ij,...jk->...ik", {{2, 1, 2, 3}, {3, 3, 2}});
  check("ij,ij,j->i", {{2, 3}, {2, 3}, {3}});
  check("ij,j->", {{2, 3}, {3}});
}

// det by Laplace expansion along the first row.
double laplace(const std::vector<double>& a, int64_t n) {
  if (n == 0) return 1.0;
  double det = 0;
  for (int64_t c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r) {
      for (int64_t k = 0; k < n; ++k) {
        if (k != c) minor.push_back(a[static_cast<size_t>(r * n + k)]);
      }
    }
    det += (c % 2 == 0 ? 1.0 : -1.0) * a[static_cast<size_t>(c)] * laplace(minor, n - 1);
  }
  return det;
}

TEST(DetKernels, BatchedAgainstLaplaceExpansion) {
  for (DType dtype : {DType::kFloat64, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Sizes& batch : std::vector<Sizes>{{}, {3}, {2, 3}, {0}}) {
      for (int64_t n : {1, 2, 3, 4, 5}) {
        Sizes sizes = batch;
        sizes.push_back(n);
        sizes.push_back(n);
        Tensor x = make_tensor(dtype, random_values(DType::kFloat64, count_of(sizes), static_cast<uint32_t>(n + 7), -1.5, 1.5), sizes);
        std::vector<double> values = to_doubles(x);
        Tensor y = run_op("Det", {x})[0];
        ASSERT_EQ(y.sizes(), batch);
        std::vector<double> got = to_doubles(y);
        double tolerance = dtype == DType::kFloat64 ? 1e-12 : dtype == DType::kFloat32 ? 1e-5 : 1e-2;
        for (int64_t b = 0; b < count_of(batch); ++b) {
          std::vector<double> matrix(values.begin() + b * n * n, values.begin() + (b + 1) * n * n);
          double expected = laplace(matrix, n);
          ASSERT_NEAR(got[static_cast<size_t>(b)], expected, tolerance * std::max(1.0, std::fabs(expected)))
              << dtype_name(dtype) << " n " << n << " matrix " << b;
        }
      }
    }
  }
  // Singular matrices: a repeated row, a zero column.
  Tensor singular = make_tensor(DType::kFloat64, {1, 2, 3, 2, 4, 6, 1, 0, 1, 0, 1, 2, 0, 3, 4, 0, 5, 6}, {2, 3, 3});
  EXPECT_EQ(to_doubles(run_op("Det", {singular})[0]), (std::vector<double>{0, 0}));
}

TEST(DetKernels, RejectsNonSquareInputs) {
  EXPECT_NE(error_of("Det", {Tensor(DType::kFloat32, {2, 3})}).find("must be [*, M, M]"), std::string::npos);
  EXPECT_NE(error_of("Det", {Tensor(DType::kFloat32, {3})}).find("must be [*, M, M]"), std::string::npos);
  EXPECT_THROW(run_op("Det", {Tensor(DType::kInt32, {2, 2})}), Error);
}

TEST(DetGradients, MatchFiniteDifferencesIncludingSingularMatrices) {
  check_gradient("Det", {make_tensor(DType::kFloat64, random_values(DType::kFloat64, 18, 3), {2, 3, 3})}, {0});
  check_gradient("Det", {make_tensor(DType::kFloat64, random_values(DType::kFloat64, 16, 4), {4, 4})}, {0});
  check_gradient("Det", {make_tensor(DType::kFloat64, {2.5}, {1, 1})}, {0});
  // Rank 2 and rank 1: the cofactors come from the minors.
  check_gradient("Det", {make_tensor(DType::kFloat64, {1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3})}, {0});
  check_gradient("Det", {make_tensor(DType::kFloat64, {1, 2, 3, 2, 4, 6, 3, 6, 9}, {3, 3})}, {0});
}

}  // namespace
}  // namespace weir
