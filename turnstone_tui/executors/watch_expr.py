"""The watch ``stop_on`` condition: a Python expression checked against an AST whitelist.

Allowed:
- literals (str, int, float, bool, None), tuples/lists/dicts/sets of them, ``x if c else y``;
- boolean, comparison (incl. ``in``, ``is``), unary and arithmetic operators; ``**`` and ``*`` go
  through guards that refuse huge results (``9**9**9``, ``"x" * 10**9``), ``%`` refuses string
  formatting; shifts and ``@`` are refused;
- the names output, data, exit_code, prev_output, changed, True/False/None and the safe builtins
  len str int float bool abs min max any all isinstance sorted (plus the type names list dict tuple);
- subscripts and slices (``data["state"]``, ``output[-100:]``);
- method calls from a short list (``.get .lower .upper .strip .startswith .endswith .split .count
  .keys .values .items`` ...) and only on str / dict / list / tuple values, checked when called;
- generator expressions with a single ``for`` over a plain name and no nesting (so
  ``any("fail" in j for j in data["jobs"])`` works but loops cannot multiply); the iterable may not
  be built by an operator (``for x in "a" * 99999``), and the body may not repeat (``*``) or call
  sorted/list/tuple/dict/min/max/any/all/str;
- string constants up to 1000 characters, ``*`` results up to 100,000 items.

These static limits keep ordinary expressions cheap; the evaluation itself runs in a child
process with a CPU budget (watch_eval), so no expression can hold the event loop.

Refused: any other node (lambda, comprehensions, f-strings, walrus, starred...), any attribute
that is not one of those method calls, any name starting with ``_``, any other name (getattr,
open, exec, eval, __import__ ...). Evaluation uses ``{"__builtins__": {}}`` as globals.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_EXPR_CHARS = 2000
MAX_NODES = 400
MAX_SEQUENCE_RESULT = 100_000  # items/characters a "*" may produce (poll output is 64 KB)
MAX_STRING_CONSTANT = 1000
# calls whose cost grows with their argument: not allowed inside a generator's body, where they
# would run once per item (``any(sorted(output) == x for x in output)`` is quadratic)
COSTLY_IN_LOOP = frozenset({"sorted", "list", "tuple", "dict", "min", "max", "any", "all", "str"})
MAX_POW_BITS = 4096

VARIABLES = frozenset({"output", "data", "exit_code", "prev_output", "changed"})
SAFE_BUILTINS: dict[str, Any] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "abs": abs,
    "min": min,
    "max": max,
    "any": any,
    "all": all,
    "isinstance": isinstance,
    "sorted": sorted,
    "list": list,
    "dict": dict,
    "tuple": tuple,
}
CONSTANT_NAMES = frozenset({"True", "False", "None"})
SAFE_METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        {
            "lower",
            "upper",
            "strip",
            "lstrip",
            "rstrip",
            "startswith",
            "endswith",
            "split",
            "rsplit",
            "splitlines",
            "count",
            "find",
            "rfind",
            "isdigit",
            "isalpha",
            "isspace",
            "casefold",
            "title",
        }
    ),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
}

_ALLOWED_NODES: tuple[type, ...] = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
    ast.Compare,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Is,
    ast.IsNot,
    ast.IfExp,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.Call,
    ast.keyword,
    ast.Attribute,
    ast.GeneratorExp,
    ast.comprehension,
)
_GUARD_POW = "_ts_pow"
_GUARD_MUL = "_ts_mul"
_GUARD_METHOD = "_ts_method"
_GUARD_MOD = "_ts_mod"


class WatchExprError(Exception):
    """The expression is not allowed, or failed while being evaluated."""


def _safe_pow(base: Any, exp: Any) -> Any:
    if isinstance(base, int) and isinstance(exp, int) and not isinstance(exp, bool):
        if exp > 0 and abs(base) > 1 and max(abs(base).bit_length(), 1) * exp > MAX_POW_BITS:
            raise WatchExprError(f"exponent too large ({base}**{exp})")
    if isinstance(exp, int | float) and abs(exp) > 10_000 and isinstance(base, int | float) and abs(base) > 1:
        raise WatchExprError(f"exponent too large ({base}**{exp})")
    return operator.pow(base, exp)


def _safe_mul(left: Any, right: Any) -> Any:
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, str | list | tuple | bytes) and isinstance(count, int):
            if len(seq) * max(count, 0) > MAX_SEQUENCE_RESULT:
                raise WatchExprError("repetition result too large")
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_POW_BITS * 2:
            raise WatchExprError("product too large")
    return operator.mul(left, right)


def _safe_mod(left: Any, right: Any) -> Any:
    if isinstance(left, str | bytes):
        raise WatchExprError("%-formatting is not allowed in stop_on")
    return operator.mod(left, right)


def _safe_method(obj: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    for kind, allowed in SAFE_METHODS.items():
        if type(obj) is kind and name in allowed:
            return getattr(obj, name)(*args, **kwargs)
    raise WatchExprError(f"method .{name}() is not allowed on a {type(obj).__name__} value")


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.count = 0
        self.generator_depth = 0

    def generic_visit(self, node: ast.AST) -> None:
        self.count += 1
        if self.count > MAX_NODES:
            raise WatchExprError(f"expression too complex (more than {MAX_NODES} parts)")
        if not isinstance(node, _ALLOWED_NODES):
            raise WatchExprError(f"{type(node).__name__} is not allowed in stop_on")
        super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:  # noqa: N802
        if node.id.startswith("_"):
            raise WatchExprError(f"name {node.id!r} is not allowed (names starting with _ are refused)")
        if isinstance(node.ctx, ast.Store):
            raise WatchExprError("assignment is not allowed")
        if node.id not in VARIABLES | CONSTANT_NAMES | set(SAFE_BUILTINS) | self.bound:
            raise WatchExprError(
                f"name {node.id!r} is not available; use {', '.join(sorted(VARIABLES))} "
                f"and the builtins {', '.join(SAFE_BUILTINS)}"
            )
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:  # noqa: N802
        # Attributes are only reachable as the callee of a method call (see visit_Call).
        raise WatchExprError(f"attribute access .{node.attr} is not allowed (only calls of safe methods)")

    def visit_Constant(self, node: ast.Constant) -> None:  # noqa: N802
        if not isinstance(node.value, str | int | float | bool | type(None)):
            raise WatchExprError(f"constant of type {type(node.value).__name__} is not allowed")
        if isinstance(node.value, str) and len(node.value) > MAX_STRING_CONSTANT:
            raise WatchExprError(f"string constants are limited to {MAX_STRING_CONSTANT} characters")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:  # noqa: N802
        if isinstance(node.op, ast.LShift | ast.RShift | ast.MatMult):
            raise WatchExprError(f"operator {type(node.op).__name__} is not allowed")
        if self.generator_depth and isinstance(node.op, ast.Mult | ast.Pow):
            raise WatchExprError("repetition (* or **) inside a generator expression is not allowed")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802
        self.count += 1
        if any(kw.arg is not None and kw.arg.startswith("_") for kw in node.keywords):
            raise WatchExprError("keyword names starting with _ are not allowed")
        if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            raise WatchExprError("*args / **kwargs are not allowed")
        func = node.func
        if isinstance(func, ast.Name):
            if self.generator_depth and func.id in COSTLY_IN_LOOP:
                raise WatchExprError(
                    f"{func.id}() inside a generator expression is not allowed (it would run once per item)"
                )
            if func.id not in SAFE_BUILTINS:
                raise WatchExprError(f"calling {func.id!r} is not allowed (only {', '.join(SAFE_BUILTINS)})")
        elif isinstance(func, ast.Attribute):
            allowed = set().union(*SAFE_METHODS.values())
            if func.attr.startswith("_") or func.attr not in allowed:
                raise WatchExprError(f"method .{func.attr}() is not allowed")
            if isinstance(func.value, ast.Name) and func.value.id in SAFE_BUILTINS:
                raise WatchExprError(f"methods of the builtin {func.value.id!r} are not allowed")
            self.visit(func.value)
            for arg in node.args:
                self.visit(arg)
            for kw in node.keywords:
                self.visit(kw)
            return
        else:
            raise WatchExprError("only calls of named builtins and safe methods are allowed")
        self.generic_visit(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:  # noqa: N802
        if self.generator_depth:
            raise WatchExprError("nested generator expressions are not allowed")
        if len(node.generators) != 1:
            raise WatchExprError("a generator expression may have only one 'for'")
        gen = node.generators[0]
        if not isinstance(gen.target, ast.Name) or gen.is_async:
            raise WatchExprError("the loop variable of a generator must be a single name")
        target = gen.target.id
        if target.startswith("_") or target in SAFE_BUILTINS or target in VARIABLES:
            raise WatchExprError(f"loop variable name {target!r} is not allowed")
        self.count += 1
        if isinstance(gen.iter, ast.BinOp | ast.GeneratorExp):
            raise WatchExprError(
                "a generator must loop over a value (a name, item or method call), not an operation"
            )
        self.visit(gen.iter)  # the iterable cannot use the loop variable
        self.generator_depth += 1
        self.bound.add(target)
        try:
            for cond in gen.ifs:
                self.visit(cond)
            self.visit(node.elt)
        finally:
            self.bound.discard(target)
            self.generator_depth -= 1

    def visit_comprehension(self, node: ast.comprehension) -> None:  # pragma: no cover - via GeneratorExp
        raise WatchExprError("comprehension outside a generator expression")


class _Guard(ast.NodeTransformer):
    """Route ``**``, ``*`` and method calls through the runtime guards."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:  # noqa: N802
        self.generic_visit(node)
        guard = {ast.Pow: _GUARD_POW, ast.Mult: _GUARD_MUL, ast.Mod: _GUARD_MOD}.get(type(node.op))
        if guard is None:
            return node
        return ast.copy_location(
            ast.Call(func=ast.Name(id=guard, ctx=ast.Load()), args=[node.left, node.right], keywords=[]), node
        )

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute):
            return ast.copy_location(
                ast.Call(
                    func=ast.Name(id=_GUARD_METHOD, ctx=ast.Load()),
                    args=[node.func.value, ast.Constant(node.func.attr), *node.args],
                    keywords=node.keywords,
                ),
                node,
            )
        return node


@dataclass(frozen=True)
class Condition:
    source: str
    _code: Any

    def evaluate(self, variables: dict[str, Any]) -> bool:
        """Evaluate against the poll's variables; raises WatchExprError on any failure."""
        env: dict[str, Any] = {"__builtins__": {}, **SAFE_BUILTINS, **_GUARDS}
        env.update({k: variables.get(k) for k in VARIABLES})
        try:
            return bool(eval(self._code, env))  # noqa: S307 - AST-whitelisted, no builtins
        except WatchExprError:
            raise
        except (MemoryError, RecursionError) as exc:
            raise WatchExprError(f"stop_on failed: {type(exc).__name__}") from None
        except Exception as exc:  # the expression's own error (KeyError, TypeError...) as a value
            raise WatchExprError(f"stop_on raised {type(exc).__name__}: {exc}") from None


_GUARDS: dict[str, Callable[..., Any]] = {
    _GUARD_POW: _safe_pow,
    _GUARD_MUL: _safe_mul,
    _GUARD_METHOD: _safe_method,
    _GUARD_MOD: _safe_mod,
}


def compile_condition(source: str) -> Condition:
    """Parse and check ``source``; raises WatchExprError saying what is not allowed."""
    if not isinstance(source, str) or not source.strip():
        raise WatchExprError("stop_on is empty")
    if len(source) > MAX_EXPR_CHARS:
        raise WatchExprError(f"stop_on is longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise WatchExprError(f"stop_on is not a valid Python expression: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise WatchExprError(f"stop_on cannot be parsed: {type(exc).__name__}") from None
    try:
        _Checker().visit(tree)
    except RecursionError:
        raise WatchExprError("stop_on is nested too deeply") from None
    guarded = ast.fix_missing_locations(_Guard().visit(tree))
    code = compile(guarded, "<stop_on>", "eval")
    return Condition(source.strip(), code)


def poll_variables(output: str, exit_code: int, prev_output: str | None) -> dict[str, Any]:
    """The variables a condition sees after one poll."""
    try:
        data = json.loads(output)
    except (ValueError, RecursionError):
        data = None
    return {
        "output": output,
        "data": data,
        "exit_code": exit_code,
        "prev_output": prev_output,
        "changed": prev_output is not None and output != prev_output,
    }
