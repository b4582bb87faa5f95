"""Every JSON Schema of the repository (a .json file that declares `$schema`) is a valid
schema of the draft it declares, checked against that draft's metaschema: a keyword
misspelt or of the wrong type would otherwise be ignored by every validator, and the
schema would check less than it says."""

import json
import os

import pytest
from conftest import ROOT
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

# Not the repository's own files: environments, caches, what a build leaves.
SKIPPED = ("build", "dist", "node_modules")


def schema_files() -> list[str]:
    found = []
    for folder, names, files in os.walk(ROOT):
        names[:] = [n for n in names if not n.startswith((".", "__")) and n not in SKIPPED
                    and not n.endswith(".egg-info")]
        for name in files:
            if name.endswith(".json"):
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8") as file:
                        data = json.load(file)
                except ValueError:  # a test's deliberately malformed file: no schema
                    continue
                if isinstance(data, dict) and "$schema" in data:
                    found.append(os.path.relpath(path, ROOT))
    return sorted(found)


SCHEMAS = schema_files()


def test_the_result_schema_is_among_them():
    assert os.path.join("grader", "result.schema.json") in SCHEMAS


@pytest.mark.parametrize("path", SCHEMAS)
def test_each_schema_is_valid_under_its_drafts_metaschema(path):
    schema = json.loads((ROOT / path).read_text(encoding="utf-8"))
    validator = validator_for(schema, default=None)
    assert validator is not None, f"{path} declares a draft jsonschema does not know: " \
        f"{schema['$schema']}"
    validator.check_schema(schema)


def test_a_schema_with_a_wrong_keyword_value_is_refused():
    broken = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object", "required": "points"}
    with pytest.raises(SchemaError, match="is not of type 'array'"):
        validator_for(broken).check_schema(broken)
