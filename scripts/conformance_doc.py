#!/usr/bin/env python3
"""Writes docs/conformance.md from the conformance test's report.

Usage: scripts/conformance_doc.py [REPORT_DIR] > docs/conformance.md
REPORT_DIR defaults to build/ci/tests/frontend, where the OnnxConformance
test writes onnx_conformance_SUITE.md for each suite on every run.
"""
import os
import collections
import re
import sys

# Why the tests that fail (not merely unsupported) fail: checked by hand.
KNOWN_FAILURES = {
    "test_training_dropout": "ONNX's expected mask comes from NumPy's RNG; Weir's Dropout has its own seeded counter-based RNG",
    "test_training_dropout_default": "as test_training_dropout",
    "test_training_dropout_default_mask": "as test_training_dropout",
    "test_training_dropout_mask": "as test_training_dropout",
    "test_castlike_BFLOAT16_to_FLOAT": "the test data feeds 'like' as [1] where the model declares [3,4]; Weir checks fed shapes",
    "test_castlike_BFLOAT16_to_FLOAT_expanded": "as test_castlike_BFLOAT16_to_FLOAT",
    "test_castlike_FLOAT_to_BFLOAT16": "as test_castlike_BFLOAT16_to_FLOAT",
    "test_castlike_FLOAT_to_BFLOAT16_expanded": "as test_castlike_BFLOAT16_to_FLOAT",
    "test_cast_FLOAT_to_BFLOAT16": "ONNX 1.12's expected values truncate f32 to bf16; Weir rounds to nearest even (as hardware does)",
    "test_bernoulli": "random draws: ONNX's expected values come from NumPy's RNG; Weir's Bernoulli draws from its own counter-based generator (its statistics are tested in tests/ops/random_ops_test.cc)",
    "test_bernoulli_double": "as test_bernoulli",
    "test_bernoulli_seed": "as test_bernoulli (a seed makes Weir's draws reproducible, not NumPy's)",
    "test_bernoulli_expanded": "as test_bernoulli (RandomUniformLike)",
    "test_bernoulli_double_expanded": "as test_bernoulli (RandomUniformLike)",
    "test_bernoulli_seed_expanded": "as test_bernoulli_seed (RandomUniformLike)",
    "test_adam_multiple": "the model sets no epsilon, so ONNX's default 1e-6 applies; the expected outputs were made with 0.01 (onnx/onnx#7749, fixed after 1.12 by setting epsilon=0.01 in the model)",
}


OTHER_SUITES = ["pytorch-converted", "pytorch-operator", "simple"]


def read_report(path):
    rows = []
    totals_line = ""
    with open(path) as report:
        for line in report:
            if line.startswith("pass "):
                totals_line = line.strip()
            match = re.match(r"\| (test_\S+) \| (\w+) \| (.*) \|$", line.rstrip("\n"))
            if match:
                rows.append(match.groups())
    return totals_line, rows


def short_reason(reason):
    reason = re.sub(r"file '[^']*': ", "", reason)
    return re.sub(r"^import: ", "", reason)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "build/ci/tests/frontend"
    totals_line, rows = read_report(os.path.join(directory, "onnx_conformance_node.md"))
    missing_ops = collections.Counter()
    types = collections.Counter()
    for name, outcome, reason in rows:
        if outcome != "unsupported":
            continue
        for op in re.findall(r"  ?([\w.]+) \(opset \d+\): Weir has no such op", reason):
            missing_ops[op] += 1
        for kind in re.findall(r"is an? (sequence|optional|map)|element type (\w+)", reason):
            types["".join(kind)] += 1
    print("# ONNX conformance\n")
    print("The four ONNX backend test suites of Debian's `libonnx-testdata` (ONNX 1.12):")
    print("node, pytorch-converted, pytorch-operator and simple, run as")
    print("`Suites/OnnxConformance.TestsThatPassedBeforeStillPass/SUITE`")
    print("(tests/frontend/onnx_conformance_test.cc), in the release suite and under")
    print("ASan+UBSan. The tolerances are the ONNX runner's: rtol 1e-3, atol 1e-7. A")
    print("suite's test fails when a test listed in `tests/frontend/onnx_conformance/SUITE.txt`")
    print("stops passing.\n")
    print("Regenerate this page with `scripts/conformance_doc.py > docs/conformance.md` after a")
    print("test run.\n")
    print(f"**node: {totals_line}**\n")
    other = {suite: read_report(os.path.join(directory, f"onnx_conformance_{suite}.md")) for suite in OTHER_SUITES}
    for suite, (line, _) in other.items():
        print(f"**{suite}: {line}**\n")
    print("## Why the rest of the node tests do not pass\n")
    print("Missing ops (tests that need them; a test may need several):\n")
    print(", ".join(f"{op} {n}" for op, n in sorted(missing_ops.items(), key=lambda x: (-x[1], x[0]))) + "\n")
    print("Value types Weir lacks (values, counted per test): " +
          ", ".join(f"{t} {n}" for t, n in sorted(types.items(), key=lambda x: -x[1])) + "\n")
    print("Tests that run but fail, each checked by hand:\n")
    for name, outcome, reason in rows:
        if outcome == "fail":
            print(f"- `{name}`: {KNOWN_FAILURES.get(name, 'not yet investigated: ' + reason)}")
    print("\n## Every node test that does not pass\n")
    print("| test | result | reason |\n|---|---|---|")
    for name, outcome, reason in rows:
        if outcome != "pass":
            print(f"| {name} | {outcome} | {short_reason(reason)} |")
    for suite, (_, suite_rows) in other.items():
        print(f"\n## Every {suite} test that does not pass\n")
        print("| test | result | reason |\n|---|---|---|")
        for name, outcome, reason in suite_rows:
            if outcome != "pass":
                print(f"| {name} | {outcome} | {short_reason(reason)} |")


main()
