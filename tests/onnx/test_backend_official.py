"""The official ONNX backend tests for Relu, run through onnx.backend.test.BackendTest.

Exactly three tests are Relu-only: the node test ``test_relu`` (built in memory by onnx; the wheel
ships no node data), ``test_ReLU`` (pytorch-converted) and ``test_single_relu_model`` (simple).
Only those three are exposed to pytest (the thousands of other backend tests would show up as
skipped); ``test_official_relu_tests_ran_and_passed`` fails if any of them is skipped, swallowed or
not run through the backend.
"""

from __future__ import annotations

import unittest
import warnings

import numpy as np
import pytest
from onnx.backend.base import BackendRep, namedtupledict
from onnx.backend.test import BackendTest

from onnx_relu.backend import OnnxReluBackend

#: Exact, anchored and case-sensitive: a bare "test_relu" would also match
#: test_relu_expanded_ver18_cpu, and "relu" matches LeakyRelu, PRelu and ThresholdedRelu.
OFFICIAL_RELU_PATTERNS = ("^test_relu_cpu$", "^test_ReLU_cpu$", "^test_single_relu_model_cpu$")
OFFICIAL_RELU_TESTS = {"test_relu_cpu", "test_ReLU_cpu", "test_single_relu_model_cpu"}


class _RecordingRep(BackendRep):
    """Runs the real prepared model and records that it did, with what it returned."""

    def __init__(self, rep: BackendRep, record: list) -> None:
        self._rep, self._record = rep, record

    def run(self, inputs, **kwargs):
        outputs = self._rep.run(inputs, **kwargs)
        self._record.append(outputs)
        return outputs


class RecordingOnnxReluBackend(OnnxReluBackend):
    """The onnx-relu backend, unchanged, except that every run is recorded."""

    runs: list = []

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        return _RecordingRep(super().prepare(model, device, **kwargs), cls.runs)


class _IdentityRep(BackendRep):
    def run(self, inputs, **kwargs):
        return namedtupledict("Outputs", ["y"])(*[np.asarray(x) for x in inputs])


class IdentityBackend(OnnxReluBackend):
    """A wrong 'Relu' that returns its input: the official tests must catch it (two of them do)."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return _IdentityRep()


def _official_relu_runner(backend) -> BackendTest:
    with warnings.catch_warnings():
        # Building onnx's in-memory node test cases overflows on purpose in unrelated
        # operators (Cast, ReduceLogSum...); pytest would turn those warnings into errors.
        warnings.simplefilter("ignore", RuntimeWarning)
        runner = BackendTest(backend, __name__)
    for pattern in OFFICIAL_RELU_PATTERNS:
        runner.include(pattern)
    return runner


def _selected_test_cases(runner: BackendTest) -> dict[str, type[unittest.TestCase]]:
    """The runner's test cases, reduced to the tests its include patterns select."""
    selected_cases = {}
    for class_name, case in runner.test_cases.items():
        selected = {
            name: getattr(case, name)
            for name in dir(case)
            if name.startswith("test_")
            and not getattr(getattr(case, name), "__unittest_skip__", False)
        }
        if selected:
            selected_cases[class_name] = type(class_name, (unittest.TestCase,), selected)
    return selected_cases


# Building a BackendTest takes seconds (it generates every node test case): build it once.
_RUNNER = _official_relu_runner(RecordingOnnxReluBackend)
_OFFICIAL_CASES = _selected_test_cases(_RUNNER)
globals().update(_OFFICIAL_CASES)  # pytest collects these three tests as ordinary tests


def _suite(cases, name=None) -> unittest.TestSuite:
    suite = unittest.TestSuite()
    for case in cases.values():
        for test_name in unittest.defaultTestLoader.getTestCaseNames(case):
            if name is None or test_name == name:
                suite.addTest(case(test_name))
    return suite


def test_include_patterns_select_exactly_the_three_relu_tests():
    names = {
        name
        for case in _OFFICIAL_CASES.values()
        for name in unittest.defaultTestLoader.getTestCaseNames(case)
    }
    assert names == OFFICIAL_RELU_TESTS


@pytest.mark.parametrize("test_name", sorted(OFFICIAL_RELU_TESTS))
def test_official_relu_tests_ran_and_passed(test_name):
    RecordingOnnxReluBackend.runs.clear()
    result = unittest.TestResult()
    _suite(_OFFICIAL_CASES, test_name).run(result)
    assert result.testsRun == 1
    assert not result.skipped, result.skipped
    assert not result.failures and not result.errors, result.failures + result.errors
    assert not result.expectedFailures and not result.unexpectedSuccesses
    # Passing through BackendIsNotSupposedToImplementIt would also count as a success: insist
    # that the model really ran on the backend and gave outputs.
    assert RecordingOnnxReluBackend.runs, f"{test_name} passed without running the backend"
    assert all(len(outputs) == 1 for outputs in RecordingOnnxReluBackend.runs)


def test_official_relu_tests_catch_a_wrong_backend_except_the_all_positive_one():
    # The generated tests look the backend up on the runner when they run.
    _RUNNER.backend = IdentityBackend
    try:
        result = unittest.TestResult()
        _suite(_OFFICIAL_CASES).run(result)
    finally:
        _RUNNER.backend = RecordingOnnxReluBackend
    assert result.testsRun == 3 and not result.skipped and not result.errors
    failed = {test._testMethodName for test, _ in result.failures}
    # test_single_relu_model feeds only positive numbers: it cannot tell Relu from identity.
    assert failed == {"test_relu_cpu", "test_ReLU_cpu"}
