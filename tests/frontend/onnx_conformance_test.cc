// The ONNX backend test suites as Weir's conformance suite.
//
// For each of the four suites of Debian's libonnx-testdata (node,
// pytorch-converted, pytorch-operator, simple), walks every test directory,
// imports model.onnx, feeds each test_data_set_*/input_*.pb and compares the
// outputs with output_*.pb the way ONNX's backend runner does: equal dtypes
// and shapes, |weir - expected| <= atol + rtol * |expected| with rtol 1e-3 and
// atol 1e-7, NaN equal to NaN.
//
// Every test is classified pass / fail / unsupported (the importer or a
// kernel says Weir does not support it) and written to a Markdown report per
// suite (<build>/tests/frontend/onnx_conformance_SUITE.md). A suite's test
// fails only when a test listed in onnx_conformance/SUITE.txt does not pass,
// so progress is ratcheted and regressions are caught; tests that pass but are
// not listed are printed, to be added. Under ASan+UBSan (the sanitize preset)
// this runs every model of the four suites: the sweep that found the
// use-after-free of constant tensors.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"
#include "ops/graph_evaluator.h"
#include "tests/ops/op_test_util.h"

namespace weir {
namespace {

namespace fs = std::filesystem;

constexpr double kDefaultRtol = 1e-3;
constexpr double kDefaultAtol = 1e-7;

struct Tolerance {
  double rtol;
  double atol;
  const char* reason;
};

// Looser tolerances, one test at a time, each with its reason.
const std::map<std::string, Tolerance>& tolerance_overrides() {
  static const std::map<std::string, Tolerance> overrides = {};
  return overrides;
}

enum class Outcome { kPass, kFail, kUnsupported };

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kUnsupported: return "unsupported";
  }
  return "?";
}

struct Result {
  Outcome outcome = Outcome::kPass;
  std::string reason;
};

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
    if (c == '|') c = '/';
  }
  size_t pos;
  while ((pos = text.find("  ")) != std::string::npos) text.erase(pos, 1);
  if (text.size() > 400) text = text.substr(0, 397) + "...";
  return text;
}

bool is_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

// "" when `actual` matches `expected` within the tolerance, else where not.
std::string compare(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance) {
  if (actual.is_none() || expected.is_none() || actual.is_sequence() || expected.is_sequence()) {
    if (actual.is_none() != expected.is_none() || actual.is_sequence() != expected.is_sequence()) {
      return actual.type_string() + ", expected " + expected.type_string();
    }
    if (actual.is_none()) return "";
    if (actual.elements().size() != expected.elements().size()) {
      return actual.type_string() + ", expected " + expected.type_string();
    }
    for (size_t i = 0; i < actual.elements().size(); ++i) {
      std::string difference = compare(actual.elements()[i], expected.elements()[i], tolerance);
      if (!difference.empty()) return "element " + std::to_string(i) + " of the sequence: " + difference;
    }
    return "";
  }
  if (actual.dtype() != expected.dtype()) {
    return "dtype " + std::string(dtype_name(actual.dtype())) + ", expected " + std::string(dtype_name(expected.dtype()));
  }
  if (actual.sizes() != expected.sizes()) return "shape " + actual.type_string() + ", expected " + expected.type_string();
  if (!is_float(actual.dtype())) {
    if (actual.bitwise_equal(expected)) return "";
    std::vector<double> a = testing::to_doubles(actual), e = testing::to_doubles(expected);
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != e[i]) return "element " + std::to_string(i) + " is " + std::to_string(a[i]) + ", expected " + std::to_string(e[i]);
    }
    return "";
  }
  std::vector<double> a = testing::to_doubles(actual), e = testing::to_doubles(expected);
  size_t mismatches = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (std::isinf(e[i]) && a[i] == e[i]) continue;
    double error = std::abs(a[i] - e[i]);
    if (!(error <= tolerance.atol + tolerance.rtol * std::abs(e[i]))) {
      if (mismatches++ == 0) first = i;
      if (!(error <= worst)) worst = error;
    }
  }
  if (mismatches == 0) return "";
  std::ostringstream text;
  text << mismatches << " of " << a.size() << " elements differ; first at " << first << ": " << a[first]
       << " vs expected " << e[first] << "; largest difference " << worst;
  return text.str();
}

std::vector<fs::path> sorted_entries(const fs::path& directory, const std::string& prefix) {
  std::vector<fs::path> entries;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) entries.push_back(entry.path());
  }
  // input_10.pb sorts after input_9.pb: order by the number after the prefix.
  std::sort(entries.begin(), entries.end(), [&](const fs::path& a, const fs::path& b) {
    auto number = [&](const fs::path& p) { return std::atoi(p.filename().string().c_str() + prefix.size()); };
    return number(a) < number(b);
  });
  return entries;
}

// Reads a test's .pb value with the form the model's ONNX type
// (`onnx_type`) gives it: Weir's type may be wider (a Loop's sequence
// output is opt(seq) where the loop may run zero times).
Tensor read_test_value(const fs::path& path, TensorType declared, const onnx::TypeProto* onnx_type) {
  if (onnx_type != nullptr) {
    declared.optional = onnx_type->has_optional_type();
    const onnx::TypeProto& inner = declared.optional ? onnx_type->optional_type().elem_type() : *onnx_type;
    declared.sequence = inner.has_sequence_type();
  }
  return read_onnx_value_file(path.string(), declared);
}

// The ONNX types of a model's graph inputs and outputs, by name.
std::map<std::string, onnx::TypeProto> onnx_value_types(const fs::path& model_file) {
  onnx::ModelProto proto;
  std::ifstream file(model_file, std::ios::binary);
  std::map<std::string, onnx::TypeProto> types;
  if (!file || !proto.ParseFromIstream(&file)) return types;
  for (const onnx::ValueInfoProto& info : proto.graph().input()) types[info.name()] = info.type();
  for (const onnx::ValueInfoProto& info : proto.graph().output()) types[info.name()] = info.type();
  return types;
}

const onnx::TypeProto* find_type(const std::map<std::string, onnx::TypeProto>& types, const std::string& name) {
  auto found = types.find(name);
  return found == types.end() ? nullptr : &found->second;
}

Result run_one(const fs::path& directory) {
  Model model;
  try {
    model = import_onnx_model((directory / "model.onnx").string());
  } catch (const Error& error) {
    return {error.kind() == ErrorKind::kUnsupported ? Outcome::kUnsupported : Outcome::kFail,
            std::string("import: ") + error.what()};
  }
  const std::map<std::string, onnx::TypeProto> onnx_types = onnx_value_types(directory / "model.onnx");
  const std::string name = directory.filename().string();
  auto override = tolerance_overrides().find(name);
  Tolerance tolerance = override != tolerance_overrides().end() ? override->second
                                                                 : Tolerance{kDefaultRtol, kDefaultAtol, ""};
  const Graph& graph = *model.graph;
  std::vector<fs::path> data_sets = sorted_entries(directory, "test_data_set_");
  if (data_sets.empty()) return {Outcome::kFail, "no test_data_set_* directory"};
  for (const fs::path& data_set : data_sets) {
    std::map<std::string, Tensor> feeds;
    std::vector<fs::path> inputs = sorted_entries(data_set, "input_");
    std::vector<fs::path> outputs = sorted_entries(data_set, "output_");
    try {
      if (inputs.size() > graph.inputs().size()) {
        return {Outcome::kFail, std::to_string(inputs.size()) + " input files for " +
                                    std::to_string(graph.inputs().size()) + " graph inputs"};
      }
      for (size_t i = 0; i < inputs.size(); ++i) {
        const Value* input = graph.inputs()[i];
        feeds[input->name()] = read_test_value(inputs[i], input->type(), find_type(onnx_types, input->name()));
      }
      std::vector<Tensor> results = evaluate_graph(graph, feeds);
      if (results.size() != outputs.size()) {
        return {Outcome::kFail, std::to_string(results.size()) + " outputs, expected " + std::to_string(outputs.size())};
      }
      for (size_t i = 0; i < outputs.size(); ++i) {
        const Value* output = graph.outputs()[i];
        Tensor expected = read_test_value(outputs[i], output->type(), find_type(onnx_types, output->name()));
        std::string difference = compare(results[i], expected, tolerance);
        if (!difference.empty()) {
          return {Outcome::kFail, data_set.filename().string() + " output " + std::to_string(i) + " (" +
                                      graph.outputs()[i]->name() + "): " + difference};
        }
      }
    } catch (const Error& error) {
      return {error.kind() == ErrorKind::kUnsupported ? Outcome::kUnsupported : Outcome::kFail,
              data_set.filename().string() + ": " + error.what()};
    } catch (const std::exception& error) {
      return {Outcome::kFail, data_set.filename().string() + ": " + error.what()};
    }
  }
  return {Outcome::kPass, ""};
}

std::set<std::string> read_expected_passes(const fs::path& path) {
  std::set<std::string> names;
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line);
  }
  return names;
}

class OnnxConformance : public ::testing::TestWithParam<std::string> {};

// Suites live under WEIR_ONNX_TESTDATA (default Debian's path), one directory each.
TEST_P(OnnxConformance, TestsThatPassedBeforeStillPass) {
  const std::string suite = GetParam();
  const char* root_env = std::getenv("WEIR_ONNX_TESTDATA");
  fs::path root = fs::path(root_env != nullptr ? root_env : "/usr/share/libonnx-testdata/data") / suite;
  ASSERT_TRUE(fs::is_directory(root)) << root << " is missing: scripts/setup.sh installs libonnx-testdata";
  // WEIR_CONFORMANCE_REPORT_DIR in the environment moves the report (runs of a
  // hand-picked WEIR_ONNX_TESTDATA subset then leave the build's report alone).
  const char* report_env = std::getenv("WEIR_CONFORMANCE_REPORT_DIR");
  fs::path report_path = fs::path(report_env != nullptr ? report_env : WEIR_CONFORMANCE_REPORT_DIR) /
                         ("onnx_conformance_" + suite + ".md");
  fs::path expected_path = fs::path(WEIR_CONFORMANCE_EXPECTED_DIR) / (suite + ".txt");
  std::set<std::string> expected = read_expected_passes(expected_path);
  ASSERT_FALSE(expected.empty()) << "no expected passes read from " << expected_path;

  std::vector<fs::path> tests;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) tests.push_back(entry.path());
  }
  std::sort(tests.begin(), tests.end());

  auto start = std::chrono::steady_clock::now();
  std::map<std::string, Result> results;
  std::map<Outcome, int> totals;
  for (const fs::path& test : tests) {
    Result result = run_one(test);
    totals[result.outcome]++;
    results.emplace(test.filename().string(), std::move(result));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::ostringstream report;
  report << "# ONNX backend tests: " << suite << "\n\n"
         << "pass " << totals[Outcome::kPass] << " / fail " << totals[Outcome::kFail] << " / unsupported "
         << totals[Outcome::kUnsupported] << " of " << tests.size() << " tests (" << root.string() << ")\n\n"
         << "| test | result | reason |\n|---|---|---|\n";
  for (const auto& [name, result] : results) {
    report << "| " << name << " | " << outcome_name(result.outcome) << " | " << one_line(result.reason) << " |\n";
  }
  fs::create_directories(report_path.parent_path());
  std::ofstream(report_path) << report.str();

  std::printf("ONNX %s tests: pass %d, fail %d, unsupported %d of %zu in %.1f s; report: %s\n", suite.c_str(),
              totals[Outcome::kPass], totals[Outcome::kFail], totals[Outcome::kUnsupported], tests.size(), seconds,
              report_path.c_str());
  int newly_passing = 0;
  for (const auto& [name, result] : results) {
    if (result.outcome == Outcome::kPass && expected.count(name) == 0) {
      if (newly_passing++ < 20) std::printf("  passes but is not in %s: %s\n", expected_path.c_str(), name.c_str());
    }
  }
  for (const std::string& name : expected) {
    auto found = results.find(name);
    if (found == results.end()) {
      ADD_FAILURE() << name << " is listed as passing but there is no such test under " << root;
    } else if (found->second.outcome != Outcome::kPass) {
      ADD_FAILURE() << name << " passed before and now is " << outcome_name(found->second.outcome) << ": "
                    << found->second.reason;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Suites, OnnxConformance,
                         ::testing::Values("node", "pytorch-converted", "pytorch-operator", "simple"),
                         [](const ::testing::TestParamInfo<std::string>& suite_info) {
                           std::string name = suite_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace weir
