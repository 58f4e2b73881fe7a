"""What a complement join computes: the two series, the result quantity and its function.

>>> spec = JoinSpec("actSpeed_C11", "vaTorque_C11", "vaPower_C11", function="power")
>>> float(spec.result_function(np.array([60.0]), np.array([1.0]))[0])  # 2π/60 · 60 · 1
6.283185307179586
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from statestream.errors import ConfigError

ResultFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]
ValueCheck = Callable[[np.ndarray], np.ndarray]


def power(speed: np.ndarray, torque: np.ndarray) -> np.ndarray:
    """Mechanical power P = 2π/60 · speed [1/min] · torque [Nm], the seed's formula."""
    return (2.0 * math.pi / 60.0) * speed * torque


def product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return left * right


def difference(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return left - right


def ratio(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return left / right


def _nonzero(values: np.ndarray) -> np.ndarray:
    return values != 0.0


@dataclass(frozen=True)
class ResultFunctionDef:
    """A named result function and, per side, which values it can take (finite ones always)."""

    function: ResultFunction
    accepts_left: ValueCheck | None = None
    accepts_right: ValueCheck | None = None


BUILTIN_FUNCTIONS: dict[str, ResultFunctionDef] = {
    "power": ResultFunctionDef(power),
    "product": ResultFunctionDef(product),
    "difference": ResultFunctionDef(difference),
    "ratio": ResultFunctionDef(ratio, accepts_right=_nonzero),
}


@dataclass(frozen=True)
class JoinSpec:
    """One complement join: left ⋈ right → result, per thing.

    `function` is a built-in name (power, product, difference, ratio) or a callable on two numpy
    arrays. `tolerance` (seconds) drops pairs farther apart than it; `disorder` (seconds) is the
    allowed disorder D of each series (see the spec).
    """

    left: str
    right: str
    result: str
    function: str | ResultFunction = "power"
    tolerance: float | None = None
    disorder: float = 0.0
    _definition: ResultFunctionDef = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.left or not self.right or not self.result:
            raise ConfigError("a join spec needs a left, a right and a result quantity")
        if self.left == self.right:
            raise ConfigError(f"a join spec needs two different quantities, got {self.left} twice")
        if self.tolerance is not None and not self.tolerance >= 0:
            raise ConfigError(f"tolerance must be ≥ 0 seconds, got {self.tolerance}")
        if not self.disorder >= 0 or math.isinf(self.disorder):
            raise ConfigError(f"disorder must be a finite number ≥ 0 seconds, got {self.disorder}")
        object.__setattr__(self, "_definition", _resolve(self.function))

    @property
    def function_name(self) -> str:
        fn = self.function
        return fn if isinstance(fn, str) else getattr(fn, "__name__", "custom")

    @property
    def result_function(self) -> ResultFunction:
        return self._definition.function

    @property
    def tolerance_ms(self) -> float:
        return math.inf if self.tolerance is None else self.tolerance * 1000.0

    @property
    def disorder_ms(self) -> float:
        return self.disorder * 1000.0

    def accepts(self, side: str, values: np.ndarray) -> np.ndarray:
        """Which values of `side` ("left"/"right") the result function can take."""
        ok = np.isfinite(values)
        check = self._definition.accepts_left if side == "left" else self._definition.accepts_right
        if check is not None:
            ok &= check(values)
        return ok


def _resolve(function: str | ResultFunction) -> ResultFunctionDef:
    if callable(function):
        return ResultFunctionDef(function)
    try:
        return BUILTIN_FUNCTIONS[function]
    except KeyError:
        names = ", ".join(BUILTIN_FUNCTIONS)
        raise ConfigError(f"unknown result function {function!r}; choose one of {names}") from None


@dataclass(frozen=True)
class SpecTemplate:
    """A join spec for every component: `{c}` in the names stands for the component (C11, …)."""

    left: str = "actSpeed_{c}"
    right: str = "vaTorque_{c}"
    result: str = "vaPower_{c}"
    function: str = "power"
    tolerance: float | None = None
    disorder: float = 0.0

    def specs_for(self, quantities: Sequence[str]) -> list[JoinSpec]:
        """The concrete specs of the components that `quantities` mention, in sorted order."""
        pattern = re.compile(
            "|".join(
                "^" + re.escape(name).replace(r"\{c\}", f"(?P<c{i}>.+)") + "$"
                for i, name in enumerate((self.left, self.right))
            )
        )
        components = set()
        for quantity in quantities:
            match = pattern.match(quantity)
            if match:
                found = [v for v in match.groupdict().values() if v is not None]
                components.add(found[0] if found else "")  # "" for a template without {c}
        return [
            JoinSpec(
                self.left.format(c=c),
                self.right.format(c=c),
                self.result.format(c=c),
                function=self.function,
                tolerance=self.tolerance,
                disorder=self.disorder,
            )
            for c in sorted(components)
        ]

    def spec_for_result(self, result: str) -> JoinSpec | None:
        """The concrete spec whose result quantity is `result`, or None if the template makes none
        (e.g. to find the spec of a join state stored by its result name)."""
        pattern = "^" + re.escape(self.result).replace(r"\{c\}", "(.+)") + "$"
        match = re.match(pattern, result)
        if match is None or len(set(match.groups())) > 1:
            return None
        component = match.group(1) if match.groups() else ""
        specs = self.specs_for([self.left.format(c=component)])
        return specs[0] if specs and specs[0].result == result else None
