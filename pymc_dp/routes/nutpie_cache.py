"""nutpie's compiled models kept across calls for record-free models that differ only in their data.

PyMC 6 samples with nutpie whenever it is installed, and nutpie compiles every model it is
given (from about a second to ten on two cores, depending on numba's on-disk cache) before a sampling run that, for a record-free model of a few
parameters and released numbers, takes about 0.1 s. ``pmdp.sample`` builds a new
record-free model for every release, but two releases of the same model differ only in
the released numbers, which are shared variables (``released_statistics``) and not
constants baked into the graph. So a compiled model can be reused: nutpie's
``CompiledPyMCModel.with_data`` swaps in the new values of the shared variables.

:func:`reusing_compiled_models` is a context manager under which PyMC's own
``nuts_sampler="nutpie"`` path (seeds, progress bar, initial values, the trace it
builds) runs unchanged, except that ``nutpie.compile_pymc_model`` looks for a compiled
model of an identical graph first. Identical means:

* the same free variables (names, order, types) and the same compile options;
* :func:`pytensor.graph.basic.equal_computations` holds for the log density and every
  variable the trace stores (constants compared by value), with the two models' value
  variables and shared variables paired by name (equal log densities of the same
  inputs have equal gradients, so the gradient need not be built to be compared);
* the same shapes of everything the trace stores (evaluated where a dim length or
  ``pm.Data`` sets them), shared-variable shapes, coordinates (values and dtype),
  dims, initial point and ``check_bounds``.

Anything else is a new compilation, never a wrong model: a near miss costs seconds,
not correctness. Only models with uniquely named shared variables are cached;
anything this module cannot read is compiled as PyMC would. The cache holds the last
:data:`CAPACITY` compiled models.

Only :func:`pymc_dp.routes.laplace.sample_released` uses it: the models it samples hold
no records (only priors and released statistics), so nothing cached here is private.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CAPACITY", "clear", "reusing_compiled_models", "stats"]

#: Compiled models kept (least recently used dropped first).
CAPACITY = 8

_LOCK = threading.RLock()


@dataclass
class _Entry:
    signature: tuple
    options: dict[str, Any]
    outputs: list[Any]
    inputs: list[Any]
    initial_point: dict[str, np.ndarray]
    compiled: Any


_CACHE: OrderedDict[int, _Entry] = OrderedDict()
_COUNTS = {"hits": 0, "misses": 0, "uncacheable": 0}
_NEXT = iter(range(1 << 62))


def stats() -> dict[str, int]:
    """How many compilations were reused (``hits``), made afresh (``misses``) or not cacheable."""
    return dict(_COUNTS)


def clear() -> None:
    """Drop every cached compiled model."""
    with _LOCK:
        _CACHE.clear()
        for key in _COUNTS:
            _COUNTS[key] = 0


def _shared_variables(outputs: list[Any]) -> list[Any] | None:
    """The shared variables the graphs read, sorted by name; None if a name is missing or repeated."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import ancestors

    found = {v for v in ancestors(outputs) if isinstance(v, SharedVariable)}
    names = [v.name for v in found]
    if any(n is None for n in names) or len(set(names)) != len(names):
        return None
    return sorted(found, key=lambda v: v.name)


def _describe(model: Any, var_names: Any, options: dict[str, Any]) -> tuple[tuple, list[Any], list[Any]] | None:
    """``(signature, outputs, inputs)`` of a model's graphs, or None if it cannot be cached."""
    value_vars = list(model.value_vars)
    traced = list(model.unobserved_value_vars)
    outputs = [model.logp(), *traced]
    shared = _shared_variables(outputs)
    if shared is None:
        return None
    names_key = None if var_names is None else tuple(var_names)
    signature = (
        bool(model.check_bounds),  # nutpie compiles the parameter checks out when it is False
        tuple((v.name, str(v.type)) for v in value_vars),
        tuple((v.name, str(v.type)) for v in traced),
        _shapes(model, traced),  # nutpie fixes its trace layout when compiling
        tuple((v.name, np.shape(v.get_value(borrow=True)), str(v.type)) for v in shared),
        tuple((name, _coordinate_key(values)) for name, values in sorted(model.coords.items())),
        tuple(sorted((name, tuple(dims)) for name, dims in model.named_vars_to_dims.items())),
        names_key,
        tuple(sorted(options)),
    )
    return signature, outputs, [*value_vars, *shared]


def _shapes(model: Any, traced: list[Any]) -> tuple:
    """The shapes of everything the trace stores, at the model's initial point.

    Static where PyTensor knows them; otherwise (dims whose lengths are shared
    variables, ``pm.Data``-sized deterministics) evaluated, since a shape that
    depends on a data value is fixed in nutpie's compiled trace layout.
    """
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    if all(dim is not None for v in traced for dim in v.type.shape):
        return tuple(tuple(v.type.shape) for v in traced)
    point = model.initial_point()
    givens = {v: pt.constant(np.asarray(point[v.name], dtype=v.type.dtype)) for v in model.value_vars}
    shapes = graph_replace([pt.as_tensor(v.shape) for v in traced], givens, strict=False)
    values = pytensor.function([], shapes, mode="FAST_COMPILE", on_unused_input="ignore")()
    return tuple(tuple(int(d) for d in shape) for shape in values)


def _shared_names(compiled: Any) -> set[str]:
    """The names of the shared variables a compiled model reads (newer nutpie keys them by id, older by name)."""
    keys = getattr(compiled, "shared_var_keys", None)
    return {v.name for v in keys} if keys is not None else set(compiled.shared_data)


def _coordinate_key(values: Any) -> tuple | None:
    """A coordinate's values with their dtype (``[0, 1]``, ``[0.0, 1.0]`` and ``[False, True]`` differ)."""
    if values is None:  # declared by its length only
        return None
    array = np.asarray(values)
    return array.dtype.str, tuple(array.tolist())


def _same(a: Any, b: Any) -> bool:
    """Equal values, arrays compared element by element (their repr elides the middle of large ones)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and np.array_equal(a, b)
    try:
        return bool(a == b)
    except Exception:  # an object without a usable equality: never assume a match
        return a is b


def _lookup(signature: tuple, options: dict[str, Any], outputs: list[Any], inputs: list[Any],
            point: dict[str, np.ndarray]) -> Any:
    from pytensor.graph.basic import equal_computations

    for key, entry in reversed(_CACHE.items()):
        if entry.signature != signature or not (_same(entry.initial_point, point) and _same(entry.options, options)):
            continue
        if equal_computations(outputs, entry.outputs, in_xs=inputs, in_ys=entry.inputs):
            _CACHE.move_to_end(key)
            return entry.compiled
    return None


@contextlib.contextmanager
def reusing_compiled_models() -> Iterator[None]:
    """Within the block, ``nutpie.compile_pymc_model`` reuses a compiled model of an identical graph.

    A no-op when nutpie is not installed. The patch is process-wide, so it serves only
    the thread that entered the block: another thread's ``pm.sample`` meanwhile
    compiles as usual (nothing of its model is kept), and a lock serialises the blocks.
    """
    if importlib.util.find_spec("nutpie") is None:
        yield
        return
    import nutpie

    with _LOCK:
        original = nutpie.compile_pymc_model
        owner = threading.get_ident()

        def compile_pymc_model(model: Any, var_names: Any = None, **options: Any) -> Any:
            if threading.get_ident() != owner:  # another thread's pm.sample: not ours to cache or serve
                return original(model, var_names=var_names, **options)
            try:
                described = _describe(model, var_names, options)
                point = {k: np.asarray(v) for k, v in model.initial_point().items()} if described else None
            except Exception:  # anything this module cannot read is compiled as PyMC would
                described = None
            if described is None:
                _COUNTS["uncacheable"] += 1
                return original(model, var_names=var_names, **options)
            signature, outputs, inputs = described
            compiled = _lookup(signature, options, outputs, inputs, point)
            if compiled is not None:
                _COUNTS["hits"] += 1
                # Only what the compiled model reads (a variable var_names leaves out is not in it).
                known = _shared_names(compiled)
                updates = {v.name: v.get_value() for v in inputs[len(model.value_vars):] if v.name in known}
                return compiled.with_data(**updates) if updates else compiled
            _COUNTS["misses"] += 1
            compiled = original(model, var_names=var_names, **options)
            _CACHE[next(_NEXT)] = _Entry(signature, copy.deepcopy(options), outputs, inputs, point, compiled)
            while len(_CACHE) > CAPACITY:
                _CACHE.popitem(last=False)
            return compiled

        nutpie.compile_pymc_model = compile_pymc_model
        try:
            yield
        finally:
            nutpie.compile_pymc_model = original
