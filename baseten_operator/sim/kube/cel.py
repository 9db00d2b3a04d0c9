"""CEL for `x-kubernetes-validations`: compile a rule once, evaluate it on a node.

A thin adapter over cel-python (`celpy`). The structural walk that decides which rules run
on which node (and turns outcomes into API causes) lives in `schema.py`.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from baseten_operator.sim.extra import missing_extra

try:
    import celpy
    import lark
    from celpy import celtypes
    from celpy.celparser import CELParseError
    from celpy.evaluation import CELEvalError
except ImportError as exc:  # the `sim` extra is missing: no CRD can be validated without it
    raise missing_extra(
        "The Kubernetes API emulator's CEL rules (x-kubernetes-validations)", exc
    ) from exc

# The lark parser inside the environment keeps per-parse state: every use of the environment
# (building it included) holds this lock.
_COMPILE_LOCK = threading.Lock()
_CACHE_SIZE = 1024
_environment: celpy.Environment | None = None


def _shared_environment() -> celpy.Environment:
    """The one CEL environment, built on first use (not at import); hold _COMPILE_LOCK."""
    global _environment
    if _environment is None:
        _environment = celpy.Environment()
    return _environment


class RuleError(Exception):
    """A rule that does not compile, fails at run time, or does not yield the expected type."""


@dataclass(frozen=True)
class CompiledRule:
    text: str
    program: celpy.Runner
    # Transition rules (those naming oldSelf) only run on updates of a correlated old value.
    is_transition: bool


@functools.lru_cache(maxsize=_CACHE_SIZE)
def compile_rule(text: str) -> CompiledRule:
    """Compile `text` (cached by rule text); raises RuleError on a syntax error."""
    with _COMPILE_LOCK:
        environment = _shared_environment()
        try:
            ast = environment.compile(text)
        except CELParseError as exc:
            raise RuleError(f"compilation failed: {exc}") from exc
        program = environment.program(ast)
    names = ast.scan_values(lambda token: isinstance(token, lark.Token))
    return CompiledRule(
        text=text, program=program, is_transition=any(name == "oldSelf" for name in names)
    )


def _evaluate(rule: CompiledRule, value: Any, old_value: Any) -> celtypes.Value:
    activation: dict[str, Any] = {"self": celpy.json_to_cel(value)}
    if old_value is not None:
        activation["oldSelf"] = celpy.json_to_cel(old_value)
    try:
        result = rule.program.evaluate(activation)
    except CELEvalError as exc:
        raise RuleError(str(exc.args[0] if exc.args else exc)) from exc
    # cel-python sometimes hands an error back as a value instead of raising it.
    if isinstance(result, CELEvalError):
        raise RuleError(str(result.args[0] if result.args else result))
    return result


def holds(rule: CompiledRule, value: Any, old_value: Any = None) -> bool:
    """Whether the rule evaluates to true with `self`=value (and `oldSelf`=old_value)."""
    result = _evaluate(rule, value, old_value)
    # cel-python may return native Python values (str, bool) for some operators.
    if not isinstance(result, celtypes.BoolType | bool):
        raise RuleError(f"rule evaluated to {type(result).__name__}, not bool")
    return bool(result)


def message_of(expression: CompiledRule, value: Any, old_value: Any = None) -> str:
    """Evaluate a messageExpression; it must yield a string."""
    result = _evaluate(expression, value, old_value)
    if not isinstance(result, str):
        raise RuleError("messageExpression must evaluate to a string")
    return str(result)
