"""The LLM-serving simulator's answers stay as recorded (tests/analysis/llm_answers.json): a reorganisation of its
code must not move a single figure a user reads. Simulated cases, no measurement."""

import json

import pytest

from tests.analysis import llm_answers
from tests.analysis.llm_answers import RECORDED, close


def _check(part: str, found: dict) -> None:
    recorded = json.loads(RECORDED.read_text())[part]
    found = json.loads(json.dumps(found))  # through JSON, as recorded
    assert found.keys() == recorded.keys()
    for name, expected in recorded.items():
        assert close(found[name], expected), f"{part}: {name}: {found[name]} != {expected}"


def test_every_simulated_case_gives_its_recorded_figures():
    _check("simulations", llm_answers.simulations())


@pytest.mark.slow
def test_the_budget_planner_and_the_settings_search_give_their_recorded_answers():
    _check("plans", llm_answers.plans())
