"""Components built from config (``_target_``): a failure is one line naming the component."""

import pytest

from dygsched.components import instantiate_component
from dygsched.errors import ConfigError, DataError


def refuse(message: str) -> None:
    raise DataError(message)


def test_a_component_is_built_with_its_arguments_and_the_callers():
    assert instantiate_component({"_target_": "builtins.dict", "a": 1}, "thing", b=2) == {"a": 1, "b": 2}


def test_a_missing_setting_names_the_component_and_the_key():
    with pytest.raises(ConfigError, match=r"^dataset 'tiny' needs dataset\.path=\.\.\. \(it has no default\)$"):
        instantiate_component({"_target_": "builtins.dict", "name": "tiny", "path": "???"}, "dataset")


def test_a_target_that_cannot_be_built_is_one_line():
    with pytest.raises(ConfigError, match=r"^cannot build model 'no\.such\.Model': ") as refused:
        instantiate_component({"_target_": "no.such.Model"}, "model")
    assert len(str(refused.value).splitlines()) == 1


def test_the_projects_own_error_passes_through():
    with pytest.raises(DataError, match="^bad rows$"):
        instantiate_component({"_target_": "tests.test_components.refuse", "message": "bad rows"}, "dataset")
