"""The docs stay true: every message text is in the contract, every exported metric in the
metrics reference, every event reason in the contract's section 10.

Message texts are read from the messages modules' source, not called: each f-string (or
plain string) is a template whose `{...}` fields stand for any text. A template is documented
when one code span of docs/contract.md holds its literal pieces in order, each field
matched by some text (the doc's own placeholder such as `{name}`, or a literal word).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

import baseten_operator
from baseten_operator.api.constants import EventReason, event_type
from baseten_operator.runtime.metrics import REGISTRY
from testsupport.paths import REPO

CONTROLLER = REPO / "baseten_operator" / "controller"
MESSAGE_MODULES = [
    CONTROLLER / kind / "messages.py" for kind in ("shared", "basetenmodel", "basetensecret")
]
CONTRACT = REPO / "docs" / "contract.md"
METRICS_DOC = REPO / "docs" / "metrics.md"
# Packages whose import starts nothing but whose collectors the operator never exports.
NOT_THE_OPERATOR = ("baseten_operator.sim", "baseten_operator.sandbox")


def template_of(node: ast.expr) -> list[str]:
    """The literal pieces of a string expression; a field splits two pieces."""
    if isinstance(node, ast.Constant):
        return [str(node.value)]
    assert isinstance(node, ast.JoinedStr)
    pieces = [""]
    for value in node.values:
        if isinstance(value, ast.Constant):
            pieces[-1] += str(value.value)
        else:
            pieces.append("")
    return pieces


class _Templates(ast.NodeVisitor):
    """Every message template of a module: f-strings and string literals, outermost only,
    leaving out docstrings and separators (`", ".join(...)`)."""

    def __init__(self) -> None:
        self.found: list[list[str]] = []

    def visit_Expr(self, node: ast.Expr) -> None:
        if not isinstance(node.value, ast.Constant):  # a bare string statement is a docstring
            self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.value, ast.Constant | ast.JoinedStr):  # "sep".join(...)
            self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.found.append(template_of(node))

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.strip():
            self.found.append([node.value])


def message_templates() -> list[list[str]]:
    visitor = _Templates()
    for module in MESSAGE_MODULES:
        visitor.visit(ast.parse(module.read_text()))
    return visitor.found


def code_spans(markdown: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", markdown)


def pattern_of(template: list[str]) -> re.Pattern[str]:
    return re.compile(".+?".join(re.escape(piece) for piece in template), re.DOTALL)


def test_the_extraction_sees_the_messages() -> None:
    templates = message_templates()
    assert len(templates) > 60
    assert ["Invalidating cached model ID ", ", will re-resolve"] in templates
    assert ["reconciliation paused"] in templates


@pytest.mark.parametrize("template", message_templates(), ids=lambda t: "{}".join(t)[:60])
def test_every_message_text_is_in_the_contract(template: list[str]) -> None:
    pattern = pattern_of(template)
    spans = code_spans(CONTRACT.read_text())
    assert any(pattern.search(span) for span in spans), (
        f"docs/contract.md has no `...` span holding the text {'{...}'.join(template)!r} "
        "of controller/basetenmodel/messages.py or controller/basetensecret/messages.py"
    )


def test_every_event_reason_is_in_section_10_with_its_type() -> None:
    section = CONTRACT.read_text().split("## 10. Events", 1)[1].split("\n## ", 1)[0]
    normal, warning = (
        set(re.findall(r"\b[A-Z][A-Za-z]+\b", part.split("\n\n", 1)[0]))
        for part in (section.split("Normal:", 1)[1], section.split("Warning:", 1)[1])
    )
    for reason in EventReason:
        assert reason.value in (warning if event_type(reason) == "Warning" else normal), reason


def operator_modules() -> list[str]:
    return [
        module.name
        for module in pkgutil.walk_packages(baseten_operator.__path__, "baseten_operator.")
        if not module.name.startswith(NOT_THE_OPERATOR) and not module.name.endswith("__main__")
    ]


def exported_metrics() -> dict[str, str]:
    """name -> type of every collector on the registry /metrics serves, once every module of
    the operator is imported (collectors are defined at import)."""
    for name in operator_modules():
        importlib.import_module(name)
    exported = {}
    for family in REGISTRY.collect():
        # prometheus_client names a counter's family without its `_total` sample suffix.
        name = f"{family.name}_total" if family.type == "counter" else family.name
        exported[name] = family.type
    return exported


def documented_metrics() -> dict[str, str]:
    """name -> type from the rows of docs/metrics.md's tables: | `name` | type | ... |."""
    rows = re.findall(r"^\| `([a-z_]+)` \| (\w+) \|", METRICS_DOC.read_text(), re.MULTILINE)
    return dict(rows)


def test_every_exported_metric_is_documented_with_its_type() -> None:
    exported = exported_metrics()
    assert "controller_runtime_reconcile_total" in exported
    assert "baseten_api_requests_total" in exported
    assert documented_metrics() == exported


def citations() -> list[tuple[Path, str, str]]:
    """(file, document, section or "") of every `docs/....md [section] N` in code and tests."""
    cited = re.compile(r"docs/([a-z-]+\.md)(?:\s+(?:sections?|steps?|§)?\s*(\d+))?")
    found = []
    for root in ("baseten_operator", "test", "hack"):
        for path in (REPO / root).rglob("*"):
            if path.suffix in {".py", ".yaml", ".json", ".sh"} and path.is_file():
                for document, section in cited.findall(path.read_text(errors="replace")):
                    found.append((path, document, section))
    return found


def test_every_citation_points_at_a_document_and_section_that_exist() -> None:
    found = citations()
    assert any(document == "contract.md" for _, document, _ in found)
    for path, document, section in found:
        target = REPO / "docs" / document
        assert target.is_file(), f"{path.relative_to(REPO)} cites missing docs/{document}"
        if section:
            assert (
                f"\n## {section}. " in target.read_text()
            ), f"{path.relative_to(REPO)} cites docs/{document} section {section}, which it lacks"


def packages() -> list[str]:
    return ["baseten_operator"] + [
        module.name
        for module in pkgutil.walk_packages(baseten_operator.__path__, "baseten_operator.")
        if module.ispkg
    ]


@pytest.mark.parametrize("package", packages())
def test_every_package_says_what_it_is_and_exports_what_exists(package: str) -> None:
    module = importlib.import_module(package)
    doc = module.__doc__ or ""
    assert len(doc.split()) > 12, f"{package}'s docstring is a placeholder"
    assert "must not import" in doc.lower() or package.endswith("sandbox"), package
    exported = module.__dict__.get("__all__")
    assert exported, f"{package} defines no __all__"
    for name in exported:
        # A name is an attribute of the package or one of its submodules.
        assert hasattr(module, name) or importlib.util.find_spec(
            f"{package}.{name}"
        ), f"{package}.__all__ names {name!r}, which does not exist"


# A cited test: `test/...py`, optionally `::test_name`; a bare `::test_name` continues the
# file cited before it in the same table cell.
_TEST_CITATION = re.compile(r"^(test/[\w/.-]+\.py)?(?:::(test_\w+))?$")


def cited_tests() -> list[tuple[str, str, str | None]]:
    """(document, test file, test function or None) of every test cited in README and docs/."""
    cited = []
    for document in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for line in document.read_text().splitlines():
            current: str | None = None
            for span in code_spans(line):
                match = _TEST_CITATION.match(span)
                if match is None or not (match[1] or match[2]):
                    continue
                current = match[1] or current
                if current is not None:
                    cited.append((document.name, current, match[2]))
    return cited


def test_the_extraction_sees_the_cited_tests() -> None:
    assert len(cited_tests()) > 20


def test_every_cited_test_exists() -> None:
    missing = []
    for document, path, function in cited_tests():
        source = REPO / path
        if not source.is_file():
            missing.append(f"{document}: {path}")
        elif function and f"def {function}(" not in source.read_text():
            missing.append(f"{document}: {path}::{function}")
    assert missing == []


# --------------------------------------------------------------------- the README's tables


def readme_section(heading: str) -> str:
    """The README text from `heading` to the next heading of the same or a higher level."""
    text = (REPO / "README.md").read_text()
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n")
    following = re.search(rf"\n#{{1,{len(level)}}} ", text[start + len(heading) + 2 :])
    end = start + len(heading) + 2 + following.start() if following else len(text)
    return text[start:end]


def test_the_status_table_names_every_status_field_and_word() -> None:
    from baseten_operator.api import constants
    from baseten_operator.api.types import BasetenModelStatus

    table = " ".join(code_spans(readme_section("### status")))
    fields = {info.alias or name for name, info in BasetenModelStatus.model_fields.items()}
    assert sorted(f for f in fields if f not in table) == []
    own_words = [
        getattr(constants, word)
        for word in ("PROMOTING", "PROMOTING_DEPLOYMENT", "PENDING", "PAUSED", "DELETING",
                     "DELETE_FAILED", "DELETE_BLOCKED", "ACTIVATING", "CONFLICT")
    ]  # fmt: skip
    assert [word for word in own_words if f"`{word}`" not in readme_section("### status")] == []


def test_the_spec_table_names_every_spec_field() -> None:
    from baseten_operator.api.types import BasetenModelSpec, EnvironmentSpec

    table = readme_section("### spec")
    fields = [info.alias or name for name, info in BasetenModelSpec.model_fields.items()]
    fields += [
        f"environment.{info.alias or name}" for name, info in EnvironmentSpec.model_fields.items()
    ]
    assert [field for field in fields if f"`{field}" not in table] == []


def test_the_events_table_names_every_reason() -> None:
    table = readme_section("## Events")
    assert [str(r) for r in EventReason if f"`{r}`" not in table] == []


def test_the_flags_table_names_every_flag_of_run() -> None:
    from baseten_operator.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    run = commands.choices["run"]  # type: ignore[attr-defined]
    flags = {option for action in run._actions for option in action.option_strings}
    table = readme_section("## Configuration")
    assert sorted(f for f in flags - {"-h", "--help"} if f"`{f}`" not in table) == []
