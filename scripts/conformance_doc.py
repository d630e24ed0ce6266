#!/usr/bin/env python3
"""Writes docs/conformance.md from the conformance test's report.

Usage: scripts/conformance_doc.py [REPORT] > docs/conformance.md
REPORT defaults to build/ci/tests/frontend/onnx_conformance.md, which the
OnnxConformance test writes on every run.
"""
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
}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "build/ci/tests/frontend/onnx_conformance.md"
    rows = []
    totals_line = ""
    with open(path) as report:
        for line in report:
            if line.startswith("pass "):
                totals_line = line.strip()
            match = re.match(r"\| (test_\S+) \| (\w+) \| (.*) \|$", line.rstrip("\n"))
            if match:
                rows.append(match.groups())
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
    print("The ONNX backend node tests (Debian `libonnx-testdata`, ONNX 1.12) run as")
    print("`OnnxConformance.NodeTestsThatPassedBeforeStillPass`")
    print("(tests/frontend/onnx_conformance_test.cc). The tolerances are the ONNX runner's:")
    print("rtol 1e-3, atol 1e-7. The test fails when a test listed in")
    print("`tests/frontend/onnx_conformance_expected_pass.txt` stops passing.\n")
    print("Regenerate this page with `scripts/conformance_doc.py > docs/conformance.md` after a")
    print("test run.\n")
    print(f"**{totals_line}**\n")
    print("## Why the rest do not pass\n")
    print("Missing ops (tests that need them; a test may need several):\n")
    print(", ".join(f"{op} {n}" for op, n in sorted(missing_ops.items(), key=lambda x: (-x[1], x[0]))) + "\n")
    print("Value types Weir lacks (values, counted per test): " +
          ", ".join(f"{t} {n}" for t, n in sorted(types.items(), key=lambda x: -x[1])) + "\n")
    print("Tests that run but fail, each checked by hand:\n")
    for name, outcome, reason in rows:
        if outcome == "fail":
            print(f"- `{name}`: {KNOWN_FAILURES.get(name, 'not yet investigated: ' + reason)}")
    print("\n## Every test that does not pass\n")
    print("| test | result | reason |\n|---|---|---|")
    for name, outcome, reason in rows:
        if outcome != "pass":
            reason = re.sub(r"file '[^']*': ", "", reason)
            reason = re.sub(r"^import: ", "", reason)
            print(f"| {name} | {outcome} | {reason} |")


main()
